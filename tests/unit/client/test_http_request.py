"""The three failures of an HTTP request to a bookie, told apart on real sockets on 127.0.0.1."""

import http.server
import socket
import threading
import urllib.error

import pytest

from bookie.client.http_request import Unreachable, read_body


def test_a_closed_port_is_unreachable_with_the_reason_in_words():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: a connect is refused
        with pytest.raises(Unreachable) as raised:
            read_body(f"http://127.0.0.1:{port}/metrics", 5)
    assert str(raised.value) == "Connection refused"


def test_a_server_that_never_answers_is_a_timeout_not_unreachable():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()  # the kernel accepts the connection; nobody reads the request
        with pytest.raises(TimeoutError):
            read_body(f"http://127.0.0.1:{sock.getsockname()[1]}/metrics", 0.5)


def test_an_error_status_is_an_http_error_and_a_good_one_the_body():
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200 if self.path == "/metrics" else 404)
            self.end_headers()
            self.wfile.write(b"up 1\n")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        assert read_body(f"{base}/metrics", 5) == b"up 1\n"
        with pytest.raises(urllib.error.HTTPError) as raised:
            read_body(f"{base}/nothing", 5)
        assert raised.value.code == 404
    finally:
        server.shutdown()
        server.server_close()
