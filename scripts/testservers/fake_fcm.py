#!/usr/bin/env python3
"""A local FCM HTTP v1 endpoint and Google OAuth2 token endpoint, for tests and benchmarks.

POST /token: the JWT-bearer grant (RFC 7523) — RS256 assertion verified with the service
account's public key; `iss` = client_email, `aud` = token_uri, scope includes
firebase.messaging, lifetime <= 1 h. Answers {access_token, expires_in, token_type}.
POST /v1/projects/{project}/messages:send: bearer must be a token issued here; the
message must carry `token`, `data` with string values only, `android.priority` and a
`ttl` Duration ("20s"). Errors use Google's format with
`details[{@type: ...FcmError, errorCode}]`.

Per-token scripts (--script JSON: {token: [answer, ...]}), then 200:
  {"status": 404, "errorCode": "UNREGISTERED"}
  {"status": 503, "errorCode": "UNAVAILABLE", "retry_after": 1}
  {"status": 429, "errorCode": "QUOTA_EXCEEDED", "retry_after": 10}
  {"revoke_access_token": true}   answers 401 UNAUTHENTICATED and forgets the token
"""
import argparse
import itertools
import json
import re
import secrets
import threading
import time
import urllib.parse

from cryptography.hazmat.primitives import serialization

import h2server
import jwtcheck

STATUS_NAMES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--public-key", required=True)
    parser.add_argument("--client-email", required=True)
    parser.add_argument("--project", required=True)
    parser.add_argument("--token-uri", help="the aud the assertion must carry (default https://127.0.0.1:<port>/token)")
    parser.add_argument("--token-lifetime", type=int, default=3599)
    parser.add_argument("--script")
    parser.add_argument("--record")
    args = parser.parse_args()

    with open(args.public_key, "rb") as f:
        public_key = serialization.load_pem_public_key(f.read())
    script = {}
    if args.script:
        with open(args.script) as f:
            script = {token: list(answers) for token, answers in json.load(f).items()}
    access_tokens = {}
    record = open(args.record, "a", buffering=1) if args.record else None
    lock = threading.Lock()
    counter = itertools.count(1)

    def log(request, status, note=None, **fields):
        if not record:
            return
        entry = {"connection": request.connection_id, "t": time.time(), "path": request.path, "status": status,
                 "note": note, "headers": {k: v for k, v in request.headers.items() if not k.startswith(":")}}
        entry.update(fields)
        with lock:
            record.write(json.dumps(entry) + "\n")

    def google_error(request, status, text, error_code=None, headers=None, **fields):
        error = {"code": status, "message": text, "status": STATUS_NAMES.get(status, "UNKNOWN")}
        if error_code:
            error["details"] = [{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": error_code}]
        log(request, status, note=error_code or error["status"], **fields)
        return h2server.Response(status, {"error": error}, [("content-type", "application/json; charset=UTF-8")] + (headers or []))

    def oauth_error(request, error, description):
        log(request, 400, note=f"{error}: {description}")
        return h2server.Response(400, {"error": error, "error_description": description}, [("content-type", "application/json")])

    def token_endpoint(request):
        form = urllib.parse.parse_qs(request.body.decode())
        if form.get("grant_type") != ["urn:ietf:params:oauth:grant-type:jwt-bearer"]:
            return oauth_error(request, "unsupported_grant_type", "Invalid grant_type")
        assertion = (form.get("assertion") or [""])[0]
        try:
            header, claims = jwtcheck.verify(assertion, public_key, "RS256")
        except jwtcheck.JWTError as error:
            return oauth_error(request, "invalid_grant", f"Invalid JWT Signature. ({error})")
        now = time.time()
        if claims.get("iss") != args.client_email:
            return oauth_error(request, "invalid_grant", "Invalid issuer")
        if claims.get("aud") != args.token_uri:
            return oauth_error(request, "invalid_grant", "Invalid JWT audience")
        if "https://www.googleapis.com/auth/firebase.messaging" not in str(claims.get("scope", "")).split():
            return oauth_error(request, "invalid_scope", "firebase.messaging scope missing")
        iat, exp = claims.get("iat"), claims.get("exp")
        if not isinstance(iat, int) or not isinstance(exp, int) or exp - iat > 3600 or iat > now + 60 or exp < now:
            return oauth_error(request, "invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe")
        token = "ya29.fake-" + secrets.token_urlsafe(24)
        with lock:
            access_tokens[token] = now + args.token_lifetime
        log(request, 200, note="token issued", jwt_header=header, jwt_claims=claims)
        return h2server.Response(200, {"access_token": token, "expires_in": args.token_lifetime, "token_type": "Bearer"},
                                 [("content-type", "application/json")])

    def send_endpoint(request, project):
        auth = request.headers.get("authorization", "")
        token = auth[7:] if auth.startswith("Bearer ") else None
        with lock:
            expiry = access_tokens.get(token)
        if expiry is None or expiry < time.time():
            return google_error(request, 401, "Request had invalid authentication credentials.")
        if project != args.project:
            return google_error(request, 403, "Permission denied on project", "SENDER_ID_MISMATCH")
        try:
            body = json.loads(request.body)
            message = body["message"]
        except (ValueError, KeyError, TypeError):
            return google_error(request, 400, "Invalid JSON payload received.", "INVALID_ARGUMENT")
        device = message.get("token")
        data = message.get("data", {})
        android = message.get("android", {})
        fields = {"message": message, "payload_size": len(request.body)}
        if not isinstance(device, str) or not device:
            return google_error(request, 400, "message.token is required", "INVALID_ARGUMENT", **fields)
        if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
            return google_error(request, 400, "Invalid value at 'message.data': every value must be a string", "INVALID_ARGUMENT", **fields)
        if android.get("priority") not in ("HIGH", "NORMAL", "high", "normal"):
            return google_error(request, 400, "Invalid value at 'message.android.priority'", "INVALID_ARGUMENT", **fields)
        if not re.fullmatch(r"\d+(\.\d{1,9})?s", str(android.get("ttl", "0s"))):
            return google_error(request, 400, "Invalid value at 'message.android.ttl'", "INVALID_ARGUMENT", **fields)
        if sum(len(k) + len(v) for k, v in data.items()) > 4096:
            return google_error(request, 400, "Message is too big", "INVALID_ARGUMENT", **fields)
        with lock:
            answers = script.get(device)
            step = answers.pop(0) if answers else None
        if step:
            if step.get("revoke_access_token"):
                with lock:
                    access_tokens.pop(token, None)
                return google_error(request, 401, "Request had invalid authentication credentials.", **fields)
            headers = [("retry-after", str(step["retry_after"]))] if "retry_after" in step else None
            return google_error(request, step["status"], "scripted " + step["errorCode"], step["errorCode"], headers, **fields)
        name = f"projects/{project}/messages/0:{int(time.time() * 1000)}{next(counter)}"
        log(request, 200, **fields)
        return h2server.Response(200, {"name": name}, [("content-type", "application/json; charset=UTF-8")])

    def handle(request):
        if request.method == "POST" and request.path == "/token":
            return token_endpoint(request)
        match = re.fullmatch(r"/v1/projects/([^/]+)/messages:send", request.path or "")
        if request.method == "POST" and match:
            return send_endpoint(request, match.group(1))
        log(request, 404)
        return h2server.Response(404, {"error": {"code": 404, "message": "Not Found", "status": "NOT_FOUND"}})

    def ready(port):
        if not args.token_uri:
            args.token_uri = f"https://127.0.0.1:{port}/token"

    h2server.serve(handle, args.port, args.cert, args.key, on_ready=ready)


if __name__ == "__main__":
    main()
