"""The sessions connected to a real (embedded, standalone) ZooKeeper: its `conf` names no member, so it is the
ensemble; its `cons` lists our session."""

from bookie.meta.ensemble import live_sessions, members


def test_a_standalone_server_is_its_own_ensemble_and_lists_our_session(store):
    host, port = store.uri.hosts[0]
    ensemble = members(store.uri.hosts)
    assert not isinstance(ensemble, str)
    assert [(m.host, m.port, m.server_id) for m in ensemble.members] == [(host, port, None)]
    assert ensemble.tick_ms > 0
    slept: list[float] = []
    assert store.session_id in live_sessions(store.uri.hosts, {store.session_id}, sleep=slept.append)
    dead = 0x7EAD
    assert dead not in live_sessions(store.uri.hosts, {dead}, sleep=slept.append)
    assert len(slept) == 1  # only the session connected nowhere was sampled twice
