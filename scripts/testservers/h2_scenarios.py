#!/usr/bin/env python3
"""An HTTP/2-over-TLS server (asyncio + h2) that misbehaves on purpose, for the push
client's connection tests. Binds 127.0.0.1 only and prints `READY <port>` when listening.

Modes (--mode):
  answer        every request gets 200 at once, its body the request's `x-request-id`.
  hold          requests are received and never answered (the test kills the process).
  goaway-at N   the first connection holds requests until N have arrived, then sends
                GOAWAY with last_stream_id = the stream of the (N/2)-th request, answers the
                requests at or below it and closes; later connections behave as `answer`.
  mute          the first connection answers its first request, then reads and drops
                everything (no PING acknowledgement, no answers) without closing: a peer
                that stopped answering; later connections behave as `answer`.
Every event is appended to --record as one JSON line:
  {"event": "received" | "answered" | "ping" | "ignored" | "closed", "connection": C, "stream": S, "id": x-request-id}
"""
import argparse
import asyncio
import itertools
import json
import os
import signal
import ssl

import h2.config
import h2.connection
import h2.events

ARGS = None
_connections = itertools.count(1)


def record(event, connection, stream, request_id):
    with open(ARGS.record, "a") as f:
        f.write(json.dumps({"event": event, "connection": connection, "stream": stream, "id": request_id}) + "\n")


class Protocol(asyncio.Protocol):
    def __init__(self):
        self.conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        self.connection_id = next(_connections)
        self.ids = {}
        self.held = []
        self.transport = None
        self.closing = False
        self.muted = False

    def connection_made(self, transport):
        self.transport = transport
        self.conn.initiate_connection()
        transport.write(self.conn.data_to_send())

    def connection_lost(self, exc):
        record("closed", self.connection_id, 0, None)

    def data_received(self, data):
        if self.muted:
            record("ignored", self.connection_id, 0, None)
            return
        for event in self.conn.receive_data(data):
            if isinstance(event, h2.events.RequestReceived):
                self.ids[event.stream_id] = dict(event.headers).get("x-request-id", "")
            elif isinstance(event, h2.events.DataReceived):
                self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.PingReceived):
                record("ping", self.connection_id, 0, None)
            elif isinstance(event, h2.events.StreamEnded) and not self.closing:
                self.on_request(event.stream_id)
        if not self.transport.is_closing():
            self.transport.write(self.conn.data_to_send())

    def on_request(self, stream_id):
        record("received", self.connection_id, stream_id, self.ids.get(stream_id))
        mode = ARGS.mode
        if mode == "hold":
            return
        if mode == "goaway-at" and self.connection_id == 1:
            self.held.append(stream_id)
            if len(self.held) == ARGS.count:
                self.closing = True
                last = sorted(self.held)[ARGS.count // 2 - 1]
                # Answers first: h2 sends nothing on a connection after its GOAWAY.
                for held in sorted(self.held):
                    if held <= last:
                        self.answer(held)
                self.conn.close_connection(last_stream_id=last)
                self.transport.write(self.conn.data_to_send())
                asyncio.get_running_loop().call_later(0.2, self.transport.close)
            return
        self.answer(stream_id)
        if mode == "mute" and self.connection_id == 1:
            self.muted = True

    def answer(self, stream_id):
        body = (self.ids.get(stream_id) or "").encode()
        self.conn.send_headers(stream_id, [(":status", "200"), ("content-length", str(len(body)))])
        self.conn.send_data(stream_id, body, end_stream=True)
        record("answered", self.connection_id, stream_id, self.ids.get(stream_id))


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--record", required=True)
    parser.add_argument("--mode", choices=["answer", "hold", "goaway-at", "mute"], default="answer")
    parser.add_argument("--count", type=int, default=10, help="N of goaway-at")
    ARGS, _ = parser.parse_known_args()

    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(ARGS.cert, ARGS.key)
    context.set_alpn_protocols(["h2"])

    async def watch_parent(parent):
        while os.getppid() == parent:
            await asyncio.sleep(0.5)
        os._exit(0)

    async def serve():
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: os._exit(0))
        asyncio.ensure_future(watch_parent(os.getppid()))
        server = await asyncio.get_running_loop().create_server(Protocol, "127.0.0.1", ARGS.port, ssl=context,
                                                                reuse_address=True)
        print(f"READY {server.sockets[0].getsockname()[1]}", flush=True)
        async with server:
            await server.serve_forever()

    asyncio.run(serve())


if __name__ == "__main__":
    main()
