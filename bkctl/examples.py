"""Examples of every command, in one place: ``--help`` shows them as the command's epilog and the man pages in
their EXAMPLES section. Each is a real command line (tests/unit/test_examples.py parses every one with the
command's own parser) and a comment saying what it does.
"""

from __future__ import annotations

import click

BOOKIE = "10.0.0.7:3181"
EXAMPLES: dict[str, list[tuple[str, str]]] = {
    "": [
        ("bkctl sandbox start", "a local cluster to try things on (ZooKeeper and 3 bookies)"),
        ("bkctl -u 'zk+hierarchical://zk1:2181;zk2:2181/ledgers' cluster info", "a cluster of your own"),
        ("bkctl --context staging ledger list", "one command on another context than the current one"),
        (
            "bkctl -v -c /etc/bookkeeper/bk_server.conf bookies list",
            "the cluster a bookie's configuration names; -v says which one was used",
        ),
        (
            "BKCTL_ZK_ENABLE_SECURITY=true BKCTL_ZK_DIGEST_AUTH_FILE=/etc/bkctl/zk-digest bkctl cluster info",
            "a secure cluster: ZooKeeper credentials from a file only its owner reads",
        ),
        (
            "bkctl --tls-trust-store ca.pem --tls-cert admin.pem --tls-key admin-key.pem bookie gc --all",
            "TLS to the bookies with a client certificate (BKCTL_TLS_* variables, contexts and -c's tls* keys too)",
        ),
    ],
    # autorecovery
    "autorecovery disable": [
        ("bkctl autorecovery disable --dry-run", "what would change, changing nothing"),
        ("bkctl autorecovery disable", "pause re-replication during maintenance"),
    ],
    "autorecovery enable": [("bkctl autorecovery enable", "let the workers re-replicate marked ledgers again")],
    "autorecovery list-under-replicated": [
        ("bkctl autorecovery list-under-replicated", "the marked ledgers and their missing replicas"),
        (f"bkctl autorecovery list-under-replicated --missing-replica {BOOKIE}", "only those missing this bookie"),
        ("bkctl autorecovery list-under-replicated --count -o json", "how many, for a monitoring script"),
        ("bkctl autorecovery list-under-replicated --explain", "why each one is stuck, and the fix"),
        ("bkctl autorecovery list-under-replicated --fix --dry-run", "what the safe fixes would do"),
        (
            "bkctl -c bk_server.conf autorecovery list-under-replicated --fix --yes -o json",
            "from cron: exit 3 while any stays stuck",
        ),
    ],
    "autorecovery lost-bookie-recovery-delay": [
        ("bkctl autorecovery lost-bookie-recovery-delay", "the current delay"),
        (
            "bkctl autorecovery lost-bookie-recovery-delay --set 600",
            "wait 10 minutes before marking a lost bookie's ledgers (a rolling restart)",
        ),
    ],
    "autorecovery run": [
        ("bkctl autorecovery run", "the auditor and re-replication workers, in the foreground"),
        (
            "bkctl autorecovery run --open-ledger-grace 60",
            "give writers a minute to fix their ensembles before fencing",
        ),
    ],
    "autorecovery status": [
        ("bkctl autorecovery status", "enabled or not, the delay, the auditor, the workers, the backlog")
    ],
    "autorecovery trigger-audit": [
        ("bkctl autorecovery trigger-audit", "mark lost bookies' ledgers now"),
        ("bkctl autorecovery trigger-audit -o json", "the auditor that was told, for a script"),
    ],
    "autorecovery who-is-auditor": [("bkctl autorecovery who-is-auditor -o json", "the elected auditor")],
    # bench
    "bench bookie": [
        ("bkctl bench bookie --entries 200000", "the first writable bookie against a raw fsync loop"),
        (
            f"bkctl bench bookie --bookie {BOOKIE} --entry-size 4096 --max-outstanding 4",
            "one bookie's latency at a light load",
        ),
    ],
    "bench read": [
        ("bkctl bench read --entries 300000", "write a ledger, then time reading it back"),
        ("bkctl bench read --ledger 42 -o json", "read an existing closed ledger"),
    ],
    "bench write": [
        ("bkctl bench write --entries 300000", "as fast as it goes, E3 W2 A2"),
        ("bkctl bench write --time 30 --rate 10000 -e 3 -w 3 -a 2", "latency at a fixed offered rate"),
    ],
    # bookie
    "bookie check-local": [
        ("bkctl -c /etc/bookkeeper/bk_server.conf bookie check-local", "a stopped bookie's index against its logs"),
        (
            "bkctl bookie check-local --journal-dir /d1/journal --ledger-dir /d2/ledgers --ledger-dir /d3/ledgers "
            "-o json",
            "directories given by hand; every inconsistency, for a script (exit 3 when any)",
        ),
    ],
    "bookie compaction resume": [
        (f"bkctl bookie compaction resume {BOOKIE}", "allow both kinds again"),
        ("bkctl bookie compaction resume --all --major", "major compaction everywhere"),
    ],
    "bookie compaction run": [
        (f"bkctl bookie compaction run {BOOKIE} --log 1f --log 20 --wait", "compact entry logs 1f.log and 20.log now"),
        (f"bkctl bookie compaction run {BOOKIE} --ledger 42 --dry-run", "the logs holding ledger 42, what they'd free"),
    ],
    "bookie compaction suspend": [
        ("bkctl bookie compaction suspend --all --major --dry-run", "which bookies would be told"),
        (f"bkctl bookie compaction suspend {BOOKIE} --http-port 8080", "a Java bookie, over its HTTP admin API"),
    ],
    "bookie decommission": [
        (f"bkctl bookie decommission {BOOKIE}", "retire a stopped bookie (asks first)"),
        (f"bkctl bookie decommission {BOOKIE} --dry-run", "the ledgers it would re-replicate, and nothing done"),
        (
            f"bkctl bookie decommission {BOOKIE} --yes --timeout 7200 -o json",
            "unattended: after two hours, exit 3 with the ledgers that blocked it",
        ),
    ],
    "bookie drain": [
        (f"bkctl bookie drain {BOOKIE} --dry-run", "the replicas that would move, where to, and the bytes"),
        (f"bkctl bookie drain {BOOKIE} --yes --rate 50", "empty a running bookie at 50 MB/s at most"),
        (
            f"bkctl bookie drain {BOOKIE} 10.0.0.8:3181 --yes --wait-writers 300 -o json",
            "two bookies; wait up to 5 minutes for open ledgers' writers; one summary document",
        ),
    ],
    "bookie format": [
        ("bkctl -c /etc/bookkeeper/bk_server.conf bookie format --dry-run", "what would be erased"),
        (
            "bkctl -c /etc/bookkeeper/bk_server.conf bookie format --delete-cookie --yes",
            "erase a retired bookie's disks and cookie: it starts again as a new bookie",
        ),
    ],
    "bookie gc": [
        ("bkctl bookie gc --all --major --wait", "a forced major compaction everywhere, then what it reclaimed"),
        (f"bkctl bookie gc {BOOKIE} --minor", "start a minor compaction and return"),
    ],
    "bookie gc-status": [
        ("bkctl bookie gc-status --all", "running or not, entry-log usage, space reclaimed"),
        (f"bkctl bookie gc-status {BOOKIE} -o json", "every entry log's usage"),
    ],
    "cluster rebalance": [
        ("bkctl cluster rebalance --dry-run", "the moves, and each bookie's bytes now and after, as bars"),
        ("bkctl cluster rebalance --yes --rate 50", "make them, copying at most 50 MB/s"),
        (
            "bkctl cluster rebalance --target 5 --max-moves 100 --dry-run -o json",
            "a tighter spread, at most 100 moves, planned for a script",
        ),
    ],
    "cluster usage": [
        ("bkctl cluster usage", "every bookie: held, expected, the gap by cause, reclaimable, and a bar each"),
        ("bkctl cluster usage --threshold 0.5 -o json", "one summary per bookie for a script, reclaimable at 0.5"),
    ],
    "bookie usage": [
        (f"bkctl bookie usage {BOOKIE}", "where its disk space goes, what compaction would free, why it is held"),
        (f"bkctl bookie usage {BOOKIE} --threshold 0.5 --logs 20", "also at usage 0.5; the 20 largest entry logs"),
        (f"bkctl bookie usage {BOOKIE} --ledger 42", "which entry logs hold ledger 42 and what keeps them"),
        (
            f"bkctl -c /etc/bookkeeper/bk_server.conf bookie usage {BOOKIE} --offline -o json",
            "from the bookie's directories (a Java bookie's too), one JSON document",
        ),
    ],
    "bookie info": [
        ("bkctl bookie info --all", "disk capacity and free space of every bookie"),
        (f"bkctl bookie info {BOOKIE} -o json", "one bookie, for a script"),
    ],
    "bookie metrics": [
        ("bkctl bookie metrics --all", "adds/s, reads/s, p99 add latency, journal queue, disk"),
        (f"bkctl bookie metrics {BOOKIE} --metrics-port 8000 -o json", "a Java bookie's Prometheus port, for a script"),
    ],
    "bookie init": [
        ("bkctl -c /etc/bookkeeper/bk_server.conf bookie init", "can a new bookie start here? exit 3 says why not"),
    ],
    "bookie expand-storage": [
        (
            "bkctl -c /etc/bookkeeper/bk_server.conf bookie expand-storage --dry-run",
            "after adding /data/disk2 to ledgerDirectories: what the cookie would list",
        ),
        ("bkctl -c /etc/bookkeeper/bk_server.conf bookie expand-storage -o json", "stamp it, then start the bookie"),
    ],
    "bookie inspect entrylog": [
        ("bkctl bookie inspect entrylog /data/bk/ledgers/current/0.log --ledger 42", "one ledger's entries in a log"),
        ("bkctl bookie inspect entrylog --usage /data/bk/ledgers", "each log's live share on a stopped bookie"),
    ],
    "bookie inspect index": [
        (
            "bkctl bookie inspect index /data/bk/ledgers/current/0/2a/2a.idx",
            "ledger 42's master key, fenced flag and entry locations",
        )
    ],
    "bookie inspect journal": [
        ("bkctl bookie inspect journal /data/bk/journal/current/19c2e1a8f30.txn", "every record of a journal file"),
        (
            "bkctl bookie inspect journal /data/bk/journal/current/19c2e1a8f30.txn --ledger 42 -o json",
            "one ledger's records, as JSON",
        ),
    ],
    "bookie inspect lastmark": [("bkctl bookie inspect lastmark /data/bk/ledgers", "where replay would start")],
    "bookie inspect ledgers": [
        ("bkctl bookie inspect ledgers /data/bk/ledgers", "a DbLedgerStorage bookie's ledgers: fenced, explicit LAC")
    ],
    "bookie inspect locations": [
        (
            "bkctl bookie inspect locations /data/bk/ledgers --ledger 42",
            "where ledger 42's entries are (DbLedgerStorage)",
        ),
        ("bkctl bookie inspect locations /data/bk/ledgers -o json", "the whole locations index, for a script"),
    ],
    "bookie check-db-index": [
        ("bkctl -c /etc/bookkeeper/bk_server.conf bookie check-db-index", "a DbLedgerStorage bookie's indexes"),
        (
            "bkctl bookie check-db-index --journal-dir /data/bk/journal --ledger-dir /data/bk/ledgers"
            " --verify-entries -o json",
            "every location read back from its entry log, for cron",
        ),
    ],
    "bookie rebuild-db-index": [
        (
            "bkctl -c /etc/bookkeeper/bk_server.conf bookie rebuild-db-index locations --dry-run",
            "how many entries a rebuild from the entry logs would index",
        ),
        (
            "bkctl -c /etc/bookkeeper/bk_server.conf bookie rebuild-db-index ledgers",
            "the ledgers index from the journals and entry logs (the old one kept)",
        ),
    ],
    "bookie convert-storage": [
        (
            "bkctl -c /etc/bookkeeper/bk_server.conf bookie convert-storage --to db --dry-run",
            "what moving to DbLedgerStorage would convert",
        ),
        (
            "bkctl -c /etc/bookkeeper/bk_server.conf bookie convert-storage --to interleaved --yes",
            "back to index files, without a prompt",
        ),
    ],
    "bookie list-files": [
        (
            "bkctl -c /etc/bookkeeper/bk_server.conf bookie list-files",
            "journal, entry log and index files, oldest first",
        ),
        ("bkctl -c /etc/bookkeeper/bk_server.conf bookie list-files --entrylog -o json", "entry logs, for a script"),
    ],
    "bookie readonly": [
        (f"bkctl bookie readonly {BOOKIE} --on", "out of the write path (reads still served)"),
        (f"bkctl bookie readonly {BOOKIE} --off --dry-run", "what --off would do"),
        ("bkctl bookie readonly --all --on --yes", "every bookie out of the write path"),
        ("bkctl bookie readonly --all --off -o json", "each bookie's state afterwards, for a script"),
    ],
    "bookie rebuild-index": [
        (
            "bkctl -c /etc/bookkeeper/bk_server.conf bookie rebuild-index 42 --password secret --dry-run",
            "what the entry logs hold of ledger 42",
        ),
        (
            "bkctl -c /etc/bookkeeper/bk_server.conf bookie rebuild-index 42 43 --password-file /etc/bkctl/pw",
            "write two ledgers' index files from the entry logs (bookie stopped)",
        ),
    ],
    "bookie recover": [
        (f"bkctl bookie recover {BOOKIE} --query", "the ledgers a lost bookie held"),
        (
            f"bkctl bookie recover {BOOKIE},10.0.0.8:3181 --rate 50000000 --yes",
            "re-replicate two lost bookies' ledgers at 50 MB/s at most",
        ),
    ],
    "bookie replace-in-ledgers": [
        (f"bkctl bookie replace-in-ledgers {BOOKIE} bookie7.example.com:3181 --dry-run", "the ledgers naming it"),
        (
            f"bkctl bookie replace-in-ledgers {BOOKIE} 10.0.1.7:3181 --rate 20 --limit 1000 --yes",
            "a moved bookie's new address, 20 ledgers a second, a thousand at most",
        ),
    ],
    "bookie run": [
        ("bkctl bookie run --conf /etc/bookkeeper/bk_server.conf", "a bookie in the foreground"),
        (
            "bkctl -u zk+hierarchical://zk1:2181/ledgers bookie run --port 3181 --journal-dir "
            "/disk1/journal --ledger-dir /disk2/ledgers --set journalSyncData=true",
            "without a configuration file",
        ),
    ],
    # bookies
    "bookies list": [
        ("bkctl bookies list", "the writable bookies"),
        ("bkctl bookies list --all -o wide", "writable, read-only and missing; why read-only; their endpoints"),
    ],
    "bookies racks get": [
        ("bkctl bookies racks get", "every bookie's rack and where it comes from (mapping, registration, default)"),
        (f"bkctl bookies racks get {BOOKIE} -o json", "one bookie's, for a script"),
    ],
    "bookies racks set": [
        (f"bkctl bookies racks set {BOOKIE} --rack /rack-a", "put a bookie on a rack (Pulsar's /bookies mapping)"),
        (
            f"bkctl bookies racks set {BOOKIE} --rack /eu-west/rack-a --group brokers-eu --hostname bk7.example",
            "region-aware: /region/rack, in a group of its own",
        ),
        (f"bkctl bookies racks set {BOOKIE} --rack /rack-b --dry-run", "the entry that would be written"),
    ],
    "bookies racks delete": [
        (f"bkctl bookies racks delete {BOOKIE}", "back to its registration's rack, or the default")
    ],
    # cluster
    "cluster backup": [
        ("bkctl cluster backup --to /backups/bk-2026-11-29", "every ledger's metadata (passwords left out)"),
        (
            "bkctl cluster backup --all --data --to hdfs://nn/backups/bk --master yarn",
            "the entries too, by a Spark job on a cluster, each file's SHA-256 in the manifest",
        ),
        (
            "bkctl cluster backup --meta application=pulsar --data --include-open --with-passwords --to /backups/p",
            "Pulsar's ledgers, open ones up to their LAC, passwords kept (the backup then private: 0700/0600)",
        ),
        (
            "bkctl cluster backup --data --with-pulsar-metadata --to /backups/pulsar",
            "and Pulsar's topics, cursors and schemas, with every ledger they reference",
        ),
        ("bkctl cluster backup --data --to /backups/bk --dry-run", "the ledgers, entries and files it would write"),
    ],
    "cluster repair-placement": [
        ("bkctl cluster repair-placement --dry-run", "the moves that would repair placement, and what cannot be"),
        ("bkctl cluster repair-placement --rate 50 --yes", "repair it, copying at most 50 MB/s, without asking"),
        ("bkctl cluster repair-placement 42 43 -o json", "two ledgers only, one JSON summary at the end"),
    ],
    "cluster check": [
        ("bkctl cluster check", "placement and replicas of every closed ledger; exit 3 on problems"),
        ("bkctl cluster check --replicas --ledger 42 --ledger 43", "two ledgers' replicas"),
        (
            "bkctl cluster check --prometheus-file /var/lib/node_exporter/bkctl_check.prom",
            "from cron, for Prometheus' textfile collector (rewritten by failed runs too)",
        ),
        (
            "bkctl cluster check --under-replicated-grace 3600",
            "fail on ledgers marked under-replicated for over an hour, only list the younger ones",
        ),
        (
            "bkctl cluster check -o json | jq '.violations[].missingEntries'",
            "each bookie's missing entries as [first, last] runs of its share",
        ),
    ],
    "cluster check-impact": [
        (f"bkctl cluster check-impact --bookie {BOOKIE} --for restart", "may this bookie restart now? what it costs"),
        (f"bkctl cluster check-impact --bookie {BOOKIE}", "may it go for good (the default: --for decommission)?"),
        (
            f"bkctl cluster check-impact --bookie {BOOKIE} --bookie 10.0.0.8:3181 --for restart -o json",
            "a rack's two bookies at once, for a script",
        ),
        (
            f"bkctl cluster check-impact --bookie {BOOKIE} --for restart --allow read-unavailable",
            "E3 W2 A1 ledgers: accept that their recovery waits for the bookie",
        ),
    ],
    "cluster restore": [
        ("bkctl cluster restore --from /backups/2026-11-29 --dry-run", "what would be restored, and every check"),
        (
            "bkctl cluster restore --from s3a://bk/backups/nightly --password-file ledger-pw --yes -o json",
            "from a backup made without --with-passwords, in a script",
        ),
        ("bkctl cluster restore --from /backups/b1 --new-ids --yes", "into a live cluster: new ids for those it has"),
        ("bkctl cluster restore --from /backups/b1 --id-map ids.txt", "chosen ids: lines OLD NEW"),
    ],
    "cluster format": [
        ("bkctl cluster format --dry-run", "how many ledgers and cookies would go"),
        ("bkctl -u zk+hierarchical://zk1:2181/test cluster format --yes", "a test cluster, from scratch"),
    ],
    "cluster info": [
        ("bkctl cluster info", "instance id, layout, bookies (missing ones named), under-replicated ledgers")
    ],
    "cluster init": [
        ("bkctl -u zk+hierarchical://zk1:2181/ledgers cluster init --dry-run", "what would be created"),
        (
            "bkctl -u zk+hierarchical://zk1:2181/ledgers cluster init -o json",
            "its instance id, and the layout as cluster info shows it",
        ),
        ("bkctl -u zk+hierarchical://zk1:2181/ledgers cluster init", "create a new cluster's znodes"),
        (
            "bkctl -c /etc/bookkeeper/client.conf cluster init",
            "a secure cluster (zkEnableSecurity=true and a login in the file): its znodes are that login's alone",
        ),
    ],
    "cluster nuke": [
        (
            "bkctl -u zk+hierarchical://zk1:2181/old cluster nuke --instance-id 6d3f1c2e-0b6a-4a59-9d0e-3a1f2b7c8d90 "
            "--dry-run",
            "what would be deleted",
        ),
    ],
    # completion
    "completion": [
        ("bkctl completion bash > ~/.local/share/bash-completion/completions/bkctl", "bash, for every new shell"),
        ("bkctl completion zsh > ~/.zfunc/_bkctl", "zsh (with ~/.zfunc in fpath)"),
        ("bkctl completion fish > ~/.config/fish/completions/bkctl.fish", "fish"),
    ],
    # config
    "config current-context": [("bkctl config current-context", "the context commands use")],
    "config delete-context": [("bkctl config delete-context staging", "forget a context")],
    "config get-contexts": [
        ("bkctl config get-contexts", "every context, the current one marked *"),
        ("bkctl config get-contexts -o json", "for a script"),
    ],
    "config set-context": [
        ("bkctl config set-context prod --service-uri 'zk+hierarchical://zk1:2181;zk2:2181/ledgers'", "name a cluster"),
        (
            "bkctl config set-context prod --http-port 8080 --timeout 5",
            "its bookies' HTTP admin port, and a shorter wait for ZooKeeper",
        ),
        (
            "bkctl config set-context prod --tls-trust-store /etc/bkctl/ca.pem --tls-cert /etc/bkctl/admin.pem "
            "--tls-key /etc/bkctl/admin-key.pem",
            "TLS to its bookies, with an admin certificate (the files' paths are kept, never their contents)",
        ),
    ],
    "config use-context": [("bkctl config use-context prod", "commands act on prod from now on")],
    # cookie
    "cookie create": [
        (f"bkctl cookie create {BOOKIE} --cookie-file {BOOKIE}.cookie", "upload a cookie made by `cookie generate`"),
    ],
    "cookie delete": [
        (f"bkctl cookie delete {BOOKIE} --dry-run", "the cookie that would be deleted"),
        (f"bkctl cookie delete {BOOKIE} --yes", "a retired bookie's cookie"),
    ],
    "cookie generate": [
        (
            f"bkctl cookie generate {BOOKIE} --journal-dirs /d1/journal --ledger-dirs /d2/ledgers,/d3/ledgers "
            f"--output-file {BOOKIE}.cookie",
            "the cookie of a bookie with two ledger disks",
        ),
        (
            f"bkctl -c /etc/bookkeeper/bk_server.conf cookie generate {BOOKIE} --output-file {BOOKIE}.cookie",
            "with the directories of its configuration",
        ),
    ],
    "cookie get": [
        (f"bkctl cookie get {BOOKIE}", "its cluster instance id and directories"),
        (f"bkctl cookie get {BOOKIE} -o json", "for a script"),
    ],
    "cookie update": [
        (f"bkctl cookie update {BOOKIE} --cookie-file {BOOKIE}.cookie --dry-run", "what would change"),
        (f"bkctl cookie update {BOOKIE} --cookie-file {BOOKIE}.cookie --yes", "replace it (disks added or moved)"),
    ],
    # ledger
    "ledger create": [
        ("printf 'a\\nb\\nc\\n' | bkctl ledger create --input -", "a ledger of three entries"),
        (
            "bkctl ledger create -e 3 -w 3 -a 2 --password-file /etc/bkctl/pw --meta app=demo --input records.txt",
            "one entry per line of a file, with a password and metadata",
        ),
    ],
    "ledger delete": [
        ("bkctl ledger delete 42 --dry-run", "what would be deleted"),
        ("bkctl ledger delete 42 43 --yes", "delete without asking"),
        ("bkctl ledger delete 42 43 --yes -o json", "the ledgers deleted, for a script (a missing one: exit 5)"),
    ],
    "ledger export": [
        ("bkctl ledger export 40-49 --to /data/out --verify", "ten ledgers to Parquet, read back and checked"),
        (
            "bkctl ledger export --meta app=demo --to hdfs://nn/bk/demo --format json --master yarn",
            "the ledgers of an application, on a Spark cluster",
        ),
        ("bkctl ledger export --all --to /data/out --dry-run", "what would be exported"),
    ],
    "ledger copy": [
        (
            "bkctl ledger copy --all --to-cluster 'zk+hierarchical://zk9:2181/ledgers' --dry-run",
            "what would be copied, what is there already, which open ledgers are left out",
        ),
        (
            "bkctl ledger copy 40-49 --to-cluster 'zk+hierarchical://zk9:2181/ledgers' --yes",
            "ten ledgers to another cluster under the same ids; run it again to finish an interrupted copy",
        ),
        (
            "bkctl ledger copy --meta app=demo --include-open --to-cluster zk+hierarchical://zk9:2181/ledgers "
            "--master yarn --yes -o json",
            "an application's ledgers, open ones up to their LAC, on a Spark cluster; the result for a script",
        ),
    ],
    "ledger list": [
        ("bkctl ledger list", "every ledger id"),
        ("bkctl ledger list --meta -o json", "with state, quorums, last entry and length"),
        ("bkctl ledger list --owner", "with each ledger's Pulsar owner, and whether Pulsar still references it"),
        (f"bkctl ledger list --bookie {BOOKIE}", "the ledgers naming it, with their entries and bytes on it"),
    ],
    "ledger metadata": [
        ("bkctl ledger metadata 42", "ensembles, quorums, state, custom metadata"),
        ("bkctl ledger metadata 42 -o yaml", "the same, as YAML"),
        ("bkctl ledger metadata 42 -o json | jq -r .ctimeIso", "when it was created, in ISO-8601 (UTC)"),
    ],
    "ledger read": [
        ("bkctl ledger read 42 --from 0 --to 9", "the first ten entries"),
        ("bkctl ledger read 42 --password-file /etc/bkctl/pw --follow", "tail an open ledger"),
        ("bkctl ledger read 42 --format raw > ledger-42.bin", "the payloads, back to back"),
        ("bkctl ledger read 42 -o json | jq -r '.[].payload | @base64d'", "one JSON array; payloads in base64"),
    ],
    "ledger recover": [
        ("bkctl ledger recover 42 --dry-run", "what recovery would close it at"),
        ("bkctl ledger recover 42 --dry-run -o json", "its state, and wouldRecover: whether it is still open"),
        ("BKCTL_LEDGER_PASSWORD=secret bkctl ledger recover 42", "fence and close it (no password in ps)"),
    ],
    "ledger update": [
        (
            "bkctl -c /etc/bookkeeper/bk_server.conf ledger update --bookie-id hostname --dry-run",
            "ledgers naming this bookie by its IP, now that it is named by its host name",
        ),
        (
            "bkctl -c /etc/bookkeeper/bk_server.conf ledger update --bookie-id ip --rate 10 --yes",
            "back to its IP, 10 ledgers a second",
        ),
    ],
    "ledger simpletest": [
        ("bkctl ledger simpletest -n 100", "a health probe for cron: exit 1 on failure"),
        ("bkctl ledger simpletest -e 3 -w 3 -a 3 -o json", "every bookie of the ensemble acks"),
    ],
    # pulsar
    "pulsar missing": [
        ("bkctl pulsar missing", "per topic, the ledgers Pulsar references that BookKeeper lost; exit 3 if any"),
        (
            "bkctl pulsar missing --pulsar-zk zk1:2181/pulsar -o json",
            "from cron: Pulsar's metadata in another chroot",
        ),
        ("bkctl pulsar missing --verify-entries 1", "also read 1% of the entries from every replica"),
    ],
    "pulsar orphans": [
        ("bkctl pulsar orphans", "Pulsar's ledgers that nothing references, an hour old or more; exit 3 if any"),
        (
            "bkctl pulsar orphans --pulsar-zk zk1:2181/pulsar --min-age 1d -o json",
            "from cron: Pulsar's metadata in another chroot, only what is a day old",
        ),
        ("bkctl pulsar orphans --delete --dry-run", "what --delete would remove"),
        ("bkctl pulsar orphans --delete --yes", "delete them, re-checking each one first"),
    ],
    "pulsar owners": [
        ("bkctl pulsar owners 42 43", "who created these ledgers, and whether it still references them"),
        ("bkctl pulsar owners -o wide", "every ledger, with what references it and why it is kept"),
    ],
    "pulsar usage": [
        ("bkctl pulsar usage", "bytes per namespace, orphaned, not Pulsar's, and the total"),
        ("bkctl pulsar usage --by topic -o json", "per topic, for a script"),
    ],
    # sandbox
    "sandbox start": [
        ("bkctl sandbox start", "ZooKeeper and 3 bookies on 127.0.0.1"),
        (
            "bkctl sandbox start --bookies 5 --autorecovery --set journalSyncData=false",
            "five bookies, with autorecovery, without fsync",
        ),
        (
            "bkctl sandbox start --secure",
            "TLS required, roles checked, a throw-away CA; bkctl here uses its admin certificate by itself",
        ),
    ],
    "sandbox start-bookie": [
        ("bkctl sandbox start-bookie 2", "bring bookie 2 back (journal replay, then it registers)")
    ],
    "sandbox status": [("bkctl sandbox status -o json", "the service URI, ZooKeeper and bookies")],
    "sandbox stop": [
        ("bkctl sandbox stop", "stop everything; the data is kept"),
        ("bkctl sandbox stop -o json", "stopped is false when nothing was running"),
    ],
    "sandbox stop-bookie": [("bkctl sandbox stop-bookie 2 --kill", "crash bookie 2 (SIGKILL), for a fault drill")],
    # top
    "top": [
        ("bkctl top", "every bookie live, slow ones flagged; a, r, l... sort, q quits"),
        ("bkctl top --once -o json", "one sample (two scrapes 2 s apart), for a script"),
        ("bkctl top --metrics-port 8000", "Java bookies' Prometheus port (prometheusStatsHttpPort)"),
    ],
}


def epilog(path: str) -> str | None:
    """The examples of the command at ``path`` ("bookie gc"; "" for bkctl itself), as click shows them."""
    examples = EXAMPLES.get(path)
    if not examples:
        return None
    lines = ["\b", "Examples:"]  # \b: click keeps these lines as they are
    for command, comment in examples:
        lines += [f"  # {comment}", f"  {command}"]
    return "\n".join(lines)


def attach(command: click.Command, path: str) -> None:
    """Set the examples as the epilog of ``command`` and of every command under it (once)."""
    text = epilog(path)
    if text and text not in (command.epilog or ""):
        command.epilog = f"{command.epilog}\n\n{text}" if command.epilog else text
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            attach(sub, f"{path} {name}".strip())
