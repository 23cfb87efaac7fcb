"""A small HTTP/2-over-TLS server (asyncio + h2) shared by the fake APNs and FCM.

Each request is handed to `handler(request) -> Response` once its stream has ended.
A response may ask for GOAWAY after it is sent, as APNs does when it shuts a
connection down. Binds 127.0.0.1 only and prints `READY <port>` when listening.

MAX_CONCURRENT_STREAMS is what the server announces in SETTINGS. With STATS_FILE set,
the file always holds {"connections_accepted": N, "max_open_streams": M}: TCP
connections accepted, and the most requests one connection had open at once (received,
not yet answered), so tests can prove a client's connection reuse and stream limit.
"""
import asyncio
import itertools
import json
import os
import signal
import ssl
import sys

import h2.config
import h2.connection
import h2.events
import h2.exceptions
import h2.settings


class Request:
    def __init__(self, stream_id, headers, connection_id):
        self.stream_id = stream_id
        self.headers = {}
        for name, value in headers:
            name = name.decode() if isinstance(name, bytes) else name
            value = value.decode() if isinstance(value, bytes) else value
            if name in self.headers:
                self.headers.setdefault("__duplicates__", []).append(name)
            self.headers[name] = value
        self.body = b""
        self.connection_id = connection_id

    @property
    def method(self):
        return self.headers.get(":method")

    @property
    def path(self):
        return self.headers.get(":path")


class Response:
    def __init__(self, status, body=b"", headers=None, goaway=False, delay=0):
        self.delay = delay
        self.status = status
        self.body = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.headers = headers or []
        self.goaway = goaway


_connection_ids = itertools.count(1)
MAX_CONCURRENT_STREAMS = 1000
STATS_FILE = None
_stats = {"connections_accepted": 0, "max_open_streams": 0}


def _write_stats():
    if STATS_FILE:
        with open(STATS_FILE + ".tmp", "w") as f:
            json.dump(_stats, f)
        os.replace(STATS_FILE + ".tmp", STATS_FILE)  # readers never see half a file


class Protocol(asyncio.Protocol):
    def __init__(self, handler):
        self.handler = handler
        self.conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=False, header_encoding=None))
        self.requests = {}
        self.transport = None
        self.connection_id = next(_connection_ids)
        self.closing = False
        self.open_streams = set()

    def connection_made(self, transport):
        self.transport = transport
        ssl_object = transport.get_extra_info("ssl_object")
        if ssl_object is not None and ssl_object.selected_alpn_protocol() != "h2":
            transport.close()
            return
        _stats["connections_accepted"] += 1
        _write_stats()
        # A fresh Settings object, not `local_settings.max_concurrent_streams = N`: h2 sends
        # only acknowledged values in its first SETTINGS frame, so that assignment left the
        # announced limit at h2's default of 100 and enforced N later.
        self.conn.local_settings = h2.settings.Settings(
            client=False, initial_values={h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: MAX_CONCURRENT_STREAMS})
        self.conn.initiate_connection()
        self.transport.write(self.conn.data_to_send())

    def data_received(self, data):
        try:
            events = self.conn.receive_data(data)
        except h2.exceptions.ProtocolError:
            self.transport.write(self.conn.data_to_send())
            self.transport.close()
            return
        for event in events:
            if isinstance(event, h2.events.RequestReceived):
                self.requests[event.stream_id] = Request(event.stream_id, event.headers, self.connection_id)
                self.open_streams.add(event.stream_id)
                if len(self.open_streams) > _stats["max_open_streams"]:
                    _stats["max_open_streams"] = len(self.open_streams)
                    _write_stats()
            elif isinstance(event, h2.events.DataReceived):
                request = self.requests.get(event.stream_id)
                if request is not None:
                    request.body += event.data
                self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded):
                request = self.requests.pop(event.stream_id, None)
                if request is not None and not self.closing:
                    self.respond(request)
            elif isinstance(event, h2.events.StreamReset):
                self.requests.pop(event.stream_id, None)
                self.open_streams.discard(event.stream_id)
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(self.conn.data_to_send())

    def respond(self, request):
        try:
            response = self.handler(request)
        except Exception as error:  # a bug in the fake must show, not hang the client
            print(f"fake server error: {error!r}", file=sys.stderr, flush=True)
            response = Response(500, {"reason": "InternalServerError"})
        if response.delay:
            # Answer later without blocking other streams (a slow provider).
            delay, response.delay = response.delay, 0
            asyncio.get_running_loop().call_later(delay, self.send_response, request, response)
            return
        self.send_response(request, response)

    def send_response(self, request, response):
        self.open_streams.discard(request.stream_id)
        if self.transport is None or self.transport.is_closing():
            return
        try:
            self._send_response(request, response)
        except h2.exceptions.ProtocolError:
            pass  # the client reset the stream or went away while we waited

    def _send_response(self, request, response):
        headers = [(":status", str(response.status))] + list(response.headers)
        if response.body:
            headers.append(("content-length", str(len(response.body))))
        self.conn.send_headers(request.stream_id, headers, end_stream=not response.body)
        if response.body:
            self.conn.send_data(request.stream_id, response.body, end_stream=True)
        if response.goaway:
            self.closing = True
            self.conn.close_connection(last_stream_id=request.stream_id)
            self.transport.write(self.conn.data_to_send())
            asyncio.get_running_loop().call_later(0.05, self.transport.close)
            return
        self.transport.write(self.conn.data_to_send())


def serve(handler, port, cert, key, on_ready=None):
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    context.set_alpn_protocols(["h2"])
    context.minimum_version = ssl.TLSVersion.TLSv1_2

    async def watch_parent(parent):
        # The test process may die without stopping us (a crash, a timeout's SIGKILL):
        # exit when we are orphaned rather than linger on a port.
        while os.getppid() == parent:
            await asyncio.sleep(0.5)
        os._exit(0)

    async def main():
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: os._exit(0))
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
        asyncio.ensure_future(watch_parent(os.getppid()))
        server = await loop.create_server(lambda: Protocol(handler), "127.0.0.1", port, ssl=context)
        bound = server.sockets[0].getsockname()[1]
        if on_ready:
            on_ready(bound)
        print(f"READY {bound}", flush=True)
        async with server:
            await server.serve_forever()

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
