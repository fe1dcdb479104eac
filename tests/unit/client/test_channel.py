"""gRPC errors of a bookie's admin service translated into the core's exceptions (bookie/client/channel.py)."""

import grpc

from bkctl.errors import ExitCode, exit_code_for
from bookie.client.channel import translate_rpc_error
from bookie.errors import AdminServiceMissing, BKError, OperationTimeout


class RpcError(grpc.RpcError):
    def __init__(self, code: grpc.StatusCode, details: str = ""):
        self._code, self._details = code, details

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details


def test_an_operation_the_bookie_does_not_implement_is_an_admin_operation_missing():
    """A bookie of ours running an older bkctl, without the RPC: exit 7, naming the operation, as any admin
    operation a bookie does not serve."""
    error = translate_rpc_error(RpcError(grpc.StatusCode.UNIMPLEMENTED, "Method not found!"), "b:3181", "storage usage")
    assert isinstance(error, AdminServiceMissing) and error.operation == "storage usage"
    assert (
        str(error) == "bookie b:3181's admin service has no storage usage: the bookie runs an older bkctl; upgrade it"
    )
    assert exit_code_for(error) == ExitCode.UNSUPPORTED


def test_other_codes_keep_their_translation():
    assert isinstance(translate_rpc_error(RpcError(grpc.StatusCode.DEADLINE_EXCEEDED), "b", "gc"), OperationTimeout)
    error = translate_rpc_error(RpcError(grpc.StatusCode.INTERNAL, "boom"), "b", "gc")
    assert type(error) is BKError and str(error) == "gc on bookie b failed: INTERNAL boom"
