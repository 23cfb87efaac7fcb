"""JWT checks shared by the fakes: ES256 (APNs provider tokens) and RS256 (Google OAuth assertions)."""
import base64
import json

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, padding
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class JWTError(Exception):
    pass


def verify(token, public_key, algorithm):
    """Returns (header, claims) or raises JWTError naming what is wrong."""
    parts = token.split(".")
    if len(parts) != 3:
        raise JWTError("not three parts")
    try:
        header = json.loads(b64url_decode(parts[0]))
        claims = json.loads(b64url_decode(parts[1]))
        signature = b64url_decode(parts[2])
    except Exception as error:
        raise JWTError(f"undecodable: {error}")
    if header.get("alg") != algorithm:
        raise JWTError(f"alg {header.get('alg')!r}, expected {algorithm}")
    signed = (parts[0] + "." + parts[1]).encode()
    try:
        if algorithm == "ES256":
            # JOSE: raw R||S (64 bytes), not DER. A DER signature is a bug in the provider.
            if len(signature) != 64:
                raise JWTError(f"ES256 signature is {len(signature)} bytes, expected raw R||S of 64")
            der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
            public_key.verify(der, signed, ec.ECDSA(hashes.SHA256()))
        else:
            public_key.verify(signature, signed, padding.PKCS1v15(), hashes.SHA256())
    except InvalidSignature:
        raise JWTError("bad signature")
    return header, claims
