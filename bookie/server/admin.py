"""The BookieAdmin gRPC service: operator controls. Read-only mode here; garbage collection comes with GC."""

from __future__ import annotations

from bookie._proto import bookie_admin_pb2 as pb
from bookie._proto import bookie_admin_pb2_grpc as pb_grpc


class BookieAdminServicer(pb_grpc.BookieAdminServicer):
    def __init__(self, bookie):
        self.bookie = bookie

    def _state(self) -> pb.BookieStateResponse:
        return pb.BookieStateResponse(
            readOnly=self.bookie.read_only,
            readOnlyByOperator=self.bookie.read_only_by_operator,
            shuttingDown=self.bookie.shutting_down,
        )

    async def GetBookieState(self, request, context):
        return self._state()

    async def SetReadOnly(self, request, context):
        await self.bookie.set_read_only_by_operator(request.readOnly)
        return self._state()
