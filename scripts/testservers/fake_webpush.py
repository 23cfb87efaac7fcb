#!/usr/bin/env python3
"""A local Web Push service (RFC 8030) for tests: it checks what a browser's push service
checks, and decrypts the message as the browser would.

POST /push/{id}:
  - Authorization: `vapid t=<JWT>, k=<key>` (RFC 8292): the JWT is ES256, verified with `k`
    (an uncompressed P-256 point, base64url); `aud` must be this service's origin
    (https://127.0.0.1:<port>), `exp` in the future and at most 24 h away, `sub` a
    mailto: or https: contact. Otherwise 401 / 403.
  - Content-Encoding: aes128gcm, TTL (integer >= 0), Urgency (very-low|low|normal|high).
  - The body is decrypted (RFC 8291 / RFC 8188) with the subscription's private key and
    auth secret (--subscriptions FILE: {id: {"private_key_pem": ..., "auth": base64url}});
    a body that does not decrypt is 400. The plaintext must be JSON.
  - Unknown ids are 404. Answers 201 with a Location.

Per-id scripts (--script JSON: {id: [answer, ...]}), then 201:
  {"status": 410}                  the subscription expired (the browser unsubscribed)
  {"status": 429, "retry_after": 1}
Every request is a JSON line in --record: path, status, note, headers, jwt_header,
jwt_claims, payload (the decrypted JSON).
"""
import argparse
import itertools
import json
import threading
import time

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes, hmac, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

import h2server
import jwtcheck


def hkdf(salt, ikm, info, length):
    """HKDF-SHA-256 for one output block (all Web Push needs)."""
    extract = hmac.HMAC(salt, hashes.SHA256())
    extract.update(ikm)
    prk = extract.finalize()
    expand = hmac.HMAC(prk, hashes.SHA256())
    expand.update(info + b"\x01")
    return expand.finalize()[:length]


class DecryptError(Exception):
    pass


def decrypt(body, private_key, auth):
    """RFC 8291 as the user agent runs it; returns the plaintext or raises DecryptError."""
    if len(body) < 21:
        raise DecryptError("shorter than the aes128gcm header")
    salt, rs, idlen = body[:16], int.from_bytes(body[16:20], "big"), body[20]
    if rs < 18:
        raise DecryptError(f"record size {rs} < 18")
    if idlen != 65 or len(body) < 21 + idlen:
        raise DecryptError(f"keyid of {idlen} bytes, expected the sender's 65-byte P-256 point")
    sender = body[21:21 + idlen]
    records = body[21 + idlen:]
    if len(records) > rs:
        raise DecryptError("more than one record (this service expects one)")
    try:
        sender_key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), sender)
    except ValueError:
        raise DecryptError("keyid is not a P-256 point")
    ua_public = private_key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    secret = private_key.exchange(ec.ECDH(), sender_key)
    ikm = hkdf(auth, secret, b"WebPush: info\x00" + ua_public + sender, 32)
    cek = hkdf(salt, ikm, b"Content-Encoding: aes128gcm\x00", 16)
    nonce = hkdf(salt, ikm, b"Content-Encoding: nonce\x00", 12)
    try:
        padded = AESGCM(cek).decrypt(nonce, records, None)
    except InvalidTag:
        raise DecryptError("authentication tag does not match (wrong keys or tampered body)")
    stripped = padded.rstrip(b"\x00")
    if not stripped or stripped[-1] != 2:
        raise DecryptError("last record does not end with the 0x02 delimiter")
    return stripped[:-1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--cert", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--subscriptions", required=True)
    parser.add_argument("--script")
    parser.add_argument("--record")
    args = parser.parse_args()

    with open(args.subscriptions) as f:
        subscriptions = {}
        for sub_id, entry in json.load(f).items():
            key = serialization.load_pem_private_key(entry["private_key_pem"].encode(), password=None)
            subscriptions[sub_id] = (key, jwtcheck.b64url_decode(entry["auth"]))
    script = {}
    if args.script:
        with open(args.script) as f:
            script = {sub_id: list(answers) for sub_id, answers in json.load(f).items()}
    record = open(args.record, "a", buffering=1) if args.record else None
    lock = threading.Lock()
    counter = itertools.count(1)
    origin = {"value": None}

    def log(request, status, note=None, **fields):
        if not record:
            return
        entry = {"connection": request.connection_id, "t": time.time(), "path": request.path, "status": status,
                 "note": note, "headers": {k: v for k, v in request.headers.items() if not k.startswith(":")}}
        entry.update(fields)
        with lock:
            record.write(json.dumps(entry) + "\n")

    def answer(request, status, note, **fields):
        log(request, status, note, **fields)
        return h2server.Response(status, {"error": note} if status >= 400 else b"", [("content-type", "application/json")])

    def check_vapid(request):
        """Returns (header, claims) or raises jwtcheck.JWTError naming what is wrong."""
        value = request.headers.get("authorization", "")
        if not value.startswith("vapid "):
            raise jwtcheck.JWTError("Authorization is not the vapid scheme")
        params = {}
        for part in value[6:].split(","):
            name, _, item = part.strip().partition("=")
            params[name] = item
        if "t" not in params or "k" not in params:
            raise jwtcheck.JWTError("vapid needs t= and k=")
        try:
            public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), jwtcheck.b64url_decode(params["k"]))
        except ValueError:
            raise jwtcheck.JWTError("k is not an uncompressed P-256 point")
        header, claims = jwtcheck.verify(params["t"], public, "ES256")
        now = time.time()
        if claims.get("aud") != origin["value"]:
            raise jwtcheck.JWTError(f"aud {claims.get('aud')!r} is not {origin['value']!r}")
        exp = claims.get("exp")
        if not isinstance(exp, int) or exp <= now or exp > now + 24 * 3600:
            raise jwtcheck.JWTError("exp must be in the future and within 24 hours")
        sub = claims.get("sub", "")
        if not (isinstance(sub, str) and (sub.startswith("mailto:") or sub.startswith("https://"))):
            raise jwtcheck.JWTError("sub must be a mailto: or https: contact")
        return header, claims, params["k"]

    def push(request, sub_id):
        try:
            header, claims, key = check_vapid(request)
        except jwtcheck.JWTError as error:
            return answer(request, 401, f"VAPID: {error}")
        fields = {"jwt_header": header, "jwt_claims": claims, "vapid_key": key, "body_size": len(request.body)}
        if sub_id not in subscriptions:
            return answer(request, 404, "no such subscription", **fields)
        if request.headers.get("content-encoding") != "aes128gcm":
            return answer(request, 400, "Content-Encoding must be aes128gcm", **fields)
        ttl = request.headers.get("ttl", "")
        if not ttl.isdigit():
            return answer(request, 400, "TTL header missing or not a non-negative integer", **fields)
        if request.headers.get("urgency", "normal") not in ("very-low", "low", "normal", "high"):
            return answer(request, 400, "bad Urgency", **fields)
        if len(request.body) > 4096:
            return answer(request, 413, "payload larger than 4096 bytes", **fields)
        private_key, auth = subscriptions[sub_id]
        try:
            plaintext = decrypt(request.body, private_key, auth)
            payload = json.loads(plaintext)
        except DecryptError as error:
            return answer(request, 400, f"cannot decrypt: {error}", **fields)
        except ValueError:
            return answer(request, 400, "decrypted payload is not JSON", **fields)
        fields["payload"] = payload
        with lock:
            answers = script.get(sub_id)
            step = answers.pop(0) if answers else None
        if step:
            headers = [("retry-after", str(step["retry_after"]))] if "retry_after" in step else []
            log(request, step["status"], note="scripted", **fields)
            return h2server.Response(step["status"], b"", headers)
        location = f"{origin['value']}/message/{next(counter)}"
        log(request, 201, **fields)
        return h2server.Response(201, b"", [("location", location)])

    def handle(request):
        path = request.path or ""
        if request.method == "POST" and path.startswith("/push/") and "/" not in path[6:]:
            return push(request, path[6:])
        return answer(request, 404, "not found")

    def ready(port):
        origin["value"] = f"https://127.0.0.1:{port}"

    h2server.serve(handle, args.port, args.cert, args.key, on_ready=ready)


if __name__ == "__main__":
    main()
