#!/usr/bin/env python3
"""A local APNs (api.push.apple.com) for tests and benchmarks.

Checks what Apple documents in "Sending notification requests to APNs" and answers as
"Handling notification responses from APNs" says: the ES256 provider token (signature
with the team's public key, `kid`, `iss`, age < 1 h), `apns-push-type`, `apns-topic`
(`<bundle>.voip` for VoIP), `apns-priority` (5 for background), `apns-expiration`,
`apns-id`, `apns-collapse-id` (at most 64 bytes), and the payload size (5120 bytes VoIP, 4096 otherwise).

Per-token scripts (--script JSON: {token: [response, ...]}) play answers in order, then 200:
  {"status": 410, "reason": "Unregistered"}           410 carries a `timestamp` (ms)
  {"status": 429, "reason": "TooManyRequests"}
  {"status": 503, "reason": "ServiceUnavailable", "goaway": true}   then GOAWAY + close
  {"expire_jwt": true}    answers 403 ExpiredProviderToken and revokes the JWT used
  {"reject_jwt": true}    answers 403 InvalidProviderToken, and so to every later request with
                          the JWT used (as for a key Apple no longer accepts)
  {"status": 200, "delay": 5}   answers 200 after 5 s (other streams go on)
Every request is appended to --record as one JSON line; --stats FILE counts accepted TCP
connections and the peak of open streams (h2server.py); --max-concurrent-streams N is
announced in SETTINGS (default 1000).
"""
import argparse
import json
import re
import threading
import time
import uuid

from cryptography.hazmat.primitives import serialization

import h2server
import jwtcheck

PUSH_TYPES = {"alert", "background", "voip", "location", "complication", "fileprovider", "mdm",
              "liveactivity", "pushtotalk", "controls", "widgets"}
UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--public-key", required=True, help="PEM public key of the .p8")
    parser.add_argument("--key-id", required=True)
    parser.add_argument("--team-id", required=True)
    parser.add_argument("--bundle", required=True)
    parser.add_argument("--script")
    parser.add_argument("--record")
    parser.add_argument("--max-token-age", type=int, default=3600)
    parser.add_argument("--max-concurrent-streams", type=int, default=1000, help="announced in SETTINGS")
    parser.add_argument("--stats", help="file kept up to date with connections accepted and peak open streams")
    args = parser.parse_args()
    h2server.MAX_CONCURRENT_STREAMS = args.max_concurrent_streams
    h2server.STATS_FILE = args.stats

    with open(args.public_key, "rb") as f:
        public_key = serialization.load_pem_public_key(f.read())
    script = {}
    if args.script:
        with open(args.script) as f:
            script = {token: list(answers) for token, answers in json.load(f).items()}
    revoked = set()
    rejected = set()
    verified = {}  # JWT text -> claims; verifying ECDSA once per token, as a cache would
    record = open(args.record, "a", buffering=1) if args.record else None
    lock = threading.Lock()

    def answer(request, status, reason=None, extra=None, headers=None, goaway=False, note=None):
        body = {}
        if reason:
            body["reason"] = reason
        if extra:
            body.update(extra)
        if record:
            entry = {"connection": request.connection_id, "stream": request.stream_id, "t": time.time(),
                     "headers": {k: v for k, v in request.headers.items() if not k.startswith(":")},
                     "path": request.path, "method": request.method, "payload_size": len(request.body),
                     "status": status, "reason": reason, "note": note}
            try:
                entry["payload"] = json.loads(request.body) if request.body else None
            except ValueError:
                entry["payload"] = request.body.decode(errors="replace")
            token = request.headers.get("authorization", "")[7:]
            if token in verified:
                entry["jwt_claims"] = verified[token][1]
                entry["jwt_header"] = verified[token][0]
            entry["jwt"] = token
            with lock:
                record.write(json.dumps(entry) + "\n")
        response_headers = [("apns-id", request.headers.get("apns-id") or str(uuid.uuid4()).upper())] + (headers or [])
        return h2server.Response(status, body if body else b"", response_headers, goaway=goaway)

    def handle(request):
        if "__duplicates__" in request.headers:
            return answer(request, 400, "DuplicateHeaders")
        if request.method != "POST":
            return answer(request, 405, "MethodNotAllowed")
        match = re.fullmatch(r"/3/device/([^/]*)", request.path or "")
        if not match:
            return answer(request, 404, "BadPath")
        token = match.group(1)
        if not token:
            return answer(request, 400, "MissingDeviceToken")
        auth = request.headers.get("authorization")
        if not auth:
            return answer(request, 403, "MissingProviderToken")
        if not auth.lower().startswith("bearer "):
            return answer(request, 403, "InvalidProviderToken", note="not a bearer token")
        jwt = auth[7:]
        if jwt not in verified:
            try:
                header, claims = jwtcheck.verify(jwt, public_key, "ES256")
            except jwtcheck.JWTError as error:
                return answer(request, 403, "InvalidProviderToken", note=str(error))
            if header.get("kid") != args.key_id:
                return answer(request, 403, "InvalidProviderToken", note="kid")
            if claims.get("iss") != args.team_id or not isinstance(claims.get("iat"), int):
                return answer(request, 403, "InvalidProviderToken", note="iss/iat")
            verified[jwt] = (header, claims)
        if jwt in rejected:
            return answer(request, 403, "InvalidProviderToken", note="rejected by script")
        header, claims = verified[jwt]
        now = time.time()
        if jwt in revoked or now - claims["iat"] > args.max_token_age:
            return answer(request, 403, "ExpiredProviderToken")
        if claims["iat"] > now + 60:
            return answer(request, 403, "InvalidProviderToken", note="iat in the future")
        if not re.fullmatch(r"[0-9a-fA-F]{64,200}", token):
            return answer(request, 400, "BadDeviceToken")
        topic = request.headers.get("apns-topic")
        if not topic:
            return answer(request, 400, "MissingTopic")
        push_type = request.headers.get("apns-push-type")
        if push_type not in PUSH_TYPES:
            return answer(request, 400, "InvalidPushType")
        if topic not in (args.bundle, args.bundle + ".voip"):
            return answer(request, 400, "TopicDisallowed")
        if (push_type == "voip") != topic.endswith(".voip"):
            return answer(request, 400, "InvalidPushType", note="voip pushes go to <bundle>.voip and only they do")
        priority = request.headers.get("apns-priority", "10")
        if priority not in ("1", "5", "10") or (push_type == "background" and priority != "5"):
            return answer(request, 400, "BadPriority")
        expiration = request.headers.get("apns-expiration")
        if expiration is not None and not re.fullmatch(r"\d+", expiration):
            return answer(request, 400, "BadExpirationDate")
        apns_id = request.headers.get("apns-id")
        if apns_id is not None and not UUID_RE.match(apns_id):
            return answer(request, 400, "BadMessageId")
        collapse_id = request.headers.get("apns-collapse-id")
        if collapse_id is not None and len(collapse_id.encode()) > 64:
            return answer(request, 400, "BadCollapseId")
        if not request.body:
            return answer(request, 400, "PayloadEmpty")
        if len(request.body) > (5120 if push_type == "voip" else 4096):
            return answer(request, 413, "PayloadTooLarge")
        with lock:
            answers = script.get(token.lower()) or script.get(token)
            step = answers.pop(0) if answers else None
        if step:
            if step.get("expire_jwt"):
                revoked.add(jwt)
                return answer(request, 403, "ExpiredProviderToken", note="scripted")
            if step.get("reject_jwt"):
                rejected.add(jwt)
                return answer(request, 403, "InvalidProviderToken", note="scripted")
            if step.get("status", 200) == 200:
                response = answer(request, 200, note="scripted")
                response.delay = step.get("delay", 0)
                return response
            extra = {"timestamp": int(time.time() * 1000)} if step["status"] == 410 else None
            headers = [("retry-after", str(step["retry_after"]))] if "retry_after" in step else None
            return answer(request, step["status"], step.get("reason"), extra, headers, goaway=step.get("goaway", False),
                          note="scripted")
        return answer(request, 200)

    h2server.serve(handle, args.port, args.cert, args.key)


if __name__ == "__main__":
    main()
