"""Which sessions are connected to the ensemble (bookie/meta/ensemble.py), from servers' answers to `conf` and `cons`
as ZooKeeper 3.9 writes them. The embedded, standalone server's answers: tests/integration/meta/test_ensemble.py."""

from bookie.meta.ensemble import SAMPLE_GAP_S, live_sessions, members

CONF = (
    "clientPort={port}\nsecureClientPort=-1\ndataDir=/data\ntickTime={tick}\nmaxSessionTimeout=40000\nserverId={sid}\n"
)
QUORUM = "initLimit=10\nsyncLimit=5\nelectionAlg=3\nelectionPort=3888\nquorumPort=2888\npeerType=0\nmembership: \n"


def cons(*sessions: int) -> str:
    lines = [f" /10.0.0.9:4{s:04d}[1](queued=0,recved=9,sent=9,sid=0x{s:x},lop=PING,est=1,to=30000)" for s in sessions]
    return "\n".join([*lines, " /10.0.0.9:5000[0](queued=0,recved=1,sent=0)", ""])


class Servers:
    """Servers by address, each answering `conf` and `cons` (what a word is not answered with: b"")."""

    def __init__(self, **answers: dict[str, str]) -> None:
        self.answers = {(a.rsplit(":", 1)[0], int(a.rsplit(":", 1)[1])): words for a, words in answers.items()}
        self.asked: list[tuple[str, int, bytes]] = []

    def __call__(self, host: str, port: int, word: bytes) -> bytes:
        self.asked.append((host, port, word))
        return self.answers.get((host, port), {}).get(word.decode(), "").encode()


def quorum_member(sid: int, membership: str, tick: int = 2000, port: int = 2181) -> str:
    return CONF.format(port=port, tick=tick, sid=sid) + QUORUM + membership + "version=100000000"


PULSAR = "".join(f"server.{i}=zk-{i}.zk:2888:3888:participant;0.0.0.0:2181\n" for i in range(3))


def pulsar(sessions: dict[int, tuple[int, ...]]) -> Servers:
    """Pulsar's Helm chart: the connect string is a Service, `pulsar-zookeeper:2181`, which reaches one pod."""
    pods = {f"zk-{i}.zk:2181": {"conf": quorum_member(i, PULSAR), "cons": cons(*sessions[i])} for i in range(3)}
    return Servers(**{"pulsar-zookeeper:2181": pods["zk-1.zk:2181"]}, **pods)


def test_every_member_of_the_ensemble_is_asked_not_only_the_connect_strings_address():
    servers = pulsar({0: (0xA0,), 1: (0xB0,), 2: (0xC0,)})
    assert live_sessions([("pulsar-zookeeper", 2181)], ask=servers) == {0xA0, 0xB0, 0xC0}
    asked = {(h, p) for h, p, w in servers.asked if w == b"cons"}
    assert asked == {("zk-0.zk", 2181), ("zk-1.zk", 2181), ("zk-2.zk", 2181)}


def test_a_member_that_does_not_answer_leaves_the_sessions_unknown_and_is_named():
    servers = pulsar({0: (0xA0,), 1: (0xB0,), 2: (0xC0,)})
    servers.answers[("zk-2.zk", 2181)]["cons"] = ""  # restarting, or cons not whitelisted
    assert live_sessions([("pulsar-zookeeper", 2181)], ask=servers) == (
        "server.2 (zk-2.zk:2181) does not answer `cons` (down, restarting, or not in 4lw.commands.whitelist)"
    )
    servers.answers[("pulsar-zookeeper", 2181)] = {}
    assert "pulsar-zookeeper:2181 does not answer `conf`" in str(
        live_sessions([("pulsar-zookeeper", 2181)], ask=servers)
    )


def test_members_without_a_client_address_are_asked_on_the_client_port_and_must_say_who_they_are():
    """A member's line has no client address when that comes from clientPort; observers are members too. Three
    servers of one host on one client port cannot all be there: the one that answers as another is not trusted."""
    lines = (
        "server.1=h1:2888:3888:participant\nserver.2=[fd00::2]:2888:3888:participant\nserver.3=h3:2888:3888:observer\n"
    )
    servers = Servers(
        **{
            "h1:2181": {"conf": quorum_member(1, lines), "cons": cons(1)},
            "fd00::2:2181": {"conf": quorum_member(2, lines), "cons": cons(2)},
            "h3:2181": {"conf": quorum_member(3, lines, tick=3000), "cons": cons(3)},
        }
    )
    ensemble = members([("h1", 2181)], ask=servers)
    assert not isinstance(ensemble, str)
    assert [str(m) for m in ensemble.members] == ["server.1 (h1:2181)", "server.2 (fd00::2:2181)", "server.3 (h3:2181)"]
    assert live_sessions([("h1", 2181)], ask=servers) == {1, 2, 3}
    servers.answers[("h3", 2181)]["conf"] = quorum_member(1, lines)
    assert live_sessions([("h1", 2181)], ask=servers) == "server.3 (h3:2181) does not answer `conf` as that member"


def test_a_session_connected_nowhere_is_sampled_again_and_a_reconnected_one_counts():
    servers = pulsar({0: (0xA0,), 1: (), 2: ()})
    slept: list[float] = []

    def sleep(seconds: float) -> None:  # the worker reconnects to zk-2 meanwhile
        slept.append(seconds)
        servers.answers[("zk-2.zk", 2181)]["cons"] = cons(0xB0)

    assert live_sessions([("pulsar-zookeeper", 2181)], {0xA0}, ask=servers, sleep=sleep) == {0xA0}
    assert slept == []  # every watched session connected: one sample
    assert live_sessions([("pulsar-zookeeper", 2181)], {0xB0, 0xDEAD}, ask=servers, sleep=sleep) == {0xA0, 0xB0}
    assert slept == [max(SAMPLE_GAP_S, 2 * 2.0)]  # 2 x tickTime (2000 ms) at least


def test_a_standalone_server_is_the_ensemble_and_a_read_only_one_is_not():
    servers = Servers(**{"127.0.0.1:2181": {"conf": CONF.format(port=2181, tick=1000, sid=0), "cons": cons(5)}})
    assert live_sessions([("127.0.0.1", 2181)], {5}, ask=servers) == {5}
    # a quorum's server cut off from the others, serving reads (readonlymode.enabled): no `membership:` line
    read_only = CONF.format(port=2181, tick=1000, sid=2) + QUORUM.replace("membership: \n", "")
    servers.answers[("127.0.0.1", 2181)]["conf"] = read_only
    assert live_sessions([("127.0.0.1", 2181)], {5}, ask=servers) == (
        "127.0.0.1:2181 serves a quorum but lists no members (read-only mode, or ZooKeeper < 3.5)"
    )


def docker(sessions: dict[int, tuple[int, ...]]) -> Servers:
    """The official Docker image's ZOO_SERVERS: each server lists itself as `0.0.0.0`, the others by name."""

    def lines(own: int) -> str:
        return "".join(
            f"server.{i}={'0.0.0.0' if i == own else f'zoo{i}'}:2888:3888:participant;0.0.0.0:2181\n" for i in (1, 2, 3)
        )

    return Servers(
        **{f"zoo{i}:2181": {"conf": quorum_member(i, lines(i)), "cons": cons(*sessions[i])} for i in (1, 2, 3)}
    )


def test_a_member_listing_itself_by_a_wildcard_is_asked_where_it_answered_as_itself():
    servers = docker({1: (0xA1,), 2: (0xA2,), 3: (0xA3,)})
    ensemble = members([("zoo1", 2181)], ask=servers)
    assert not isinstance(ensemble, str)
    assert [str(m) for m in ensemble.members] == [
        "server.1 (zoo1:2181)",
        "server.2 (zoo2:2181)",
        "server.3 (zoo3:2181)",
    ]
    assert live_sessions([("zoo1", 2181)], ask=servers) == {0xA1, 0xA2, 0xA3}
    assert not [h for h, _, _ in servers.asked if h == "0.0.0.0"]
    # another member's line names it: that address wins over where it was asked
    servers.answers[("zoo2", 2181)]["conf"] = servers.answers[("zoo2", 2181)]["conf"].replace(
        "server.1=zoo1", "server.1=zk-a"
    )
    servers.answers[("zk-a", 2181)] = servers.answers[("zoo1", 2181)]
    ensemble = members([("zoo1", 2181), ("zoo2", 2181)], ask=servers)
    assert not isinstance(ensemble, str) and str(ensemble.members[0]) == "server.1 (zk-a:2181)"


def test_a_member_listed_by_a_wildcard_only_and_not_asked_leaves_the_sessions_unknown():
    servers = docker({1: (0xA1,), 2: (0xA2,), 3: (0xA3,)})
    conf = servers.answers[("zoo2", 2181)]["conf"]
    servers.answers[("zoo2", 2181)]["conf"] = conf.replace("server.1=zoo1", "server.1=0.0.0.0")
    assert live_sessions([("zoo2", 2181)], ask=servers) == (
        "server.1 is listed by a wildcard address only, and was not asked as itself"
    )
