#ifndef PORTARIA_COPENSSL_SHIM_H
#define PORTARIA_COPENSSL_SHIM_H
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <openssl/rand.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ecdsa.h>
#include <openssl/ec.h>
#include <openssl/obj_mac.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

// TLS for the HTTP/2 push client. These OpenSSL calls are macros over SSL_ctrl and
// SSL_CTX_ctrl, which Swift cannot call.
static inline long portaria_ssl_ctx_set_mode(SSL_CTX *ctx, long mode) { return SSL_CTX_set_mode(ctx, mode); }
static inline int portaria_ssl_ctx_set_min_tls12(SSL_CTX *ctx) { return (int)SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION); }
static inline int portaria_ssl_set_sni(SSL *ssl, const char *name) { return (int)SSL_set_tlsext_host_name(ssl, name); }

// P-256 helpers for Web Push (RFC 8291 ECDH, RFC 8292 VAPID). Swift cannot call
// OpenSSL's function-like macros (EVP_EC_gen, EVP_PKEY_assign_EC_KEY), so the few steps
// that need the EC_KEY API live here. EC_KEY is deprecated in OpenSSL 3 but kept for
// compatibility; these helpers are its only users.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

static inline EVP_PKEY *portaria_p256_wrap(EC_KEY *ec) {
    EVP_PKEY *pkey = EVP_PKEY_new();
    if (pkey == NULL || EVP_PKEY_set1_EC_KEY(pkey, ec) != 1) { EVP_PKEY_free(pkey); pkey = NULL; }
    EC_KEY_free(ec);
    return pkey;
}

/// A fresh P-256 key pair, or NULL.
static inline EVP_PKEY *portaria_p256_generate(void) {
    EC_KEY *ec = EC_KEY_new_by_curve_name(NID_X9_62_prime256v1);
    if (ec == NULL) return NULL;
    if (EC_KEY_generate_key(ec) != 1) { EC_KEY_free(ec); return NULL; }
    return portaria_p256_wrap(ec);
}

/// The key pair of the 32-byte private scalar `d` (public point computed), or NULL.
static inline EVP_PKEY *portaria_p256_from_private(const unsigned char *d, size_t length) {
    if (length != 32) return NULL;
    EC_KEY *ec = EC_KEY_new_by_curve_name(NID_X9_62_prime256v1);
    BIGNUM *scalar = BN_bin2bn(d, (int)length, NULL);
    const EC_GROUP *group = ec ? EC_KEY_get0_group(ec) : NULL;
    EC_POINT *point = group ? EC_POINT_new(group) : NULL;
    int ok = ec && scalar && point
        && EC_POINT_mul(group, point, scalar, NULL, NULL, NULL) == 1
        && EC_KEY_set_private_key(ec, scalar) == 1
        && EC_KEY_set_public_key(ec, point) == 1
        && EC_KEY_check_key(ec) == 1;
    EC_POINT_free(point);
    BN_clear_free(scalar);
    if (!ok) { EC_KEY_free(ec); return NULL; }
    return portaria_p256_wrap(ec);
}

/// A public key from an uncompressed point (0x04 || X || Y, 65 bytes), or NULL when the
/// bytes are not a point on P-256 (EC_POINT_oct2point and EC_KEY_check_key refuse).
static inline EVP_PKEY *portaria_p256_from_public(const unsigned char *point, size_t length) {
    if (length != 65 || point[0] != 0x04) return NULL;
    EC_KEY *ec = EC_KEY_new_by_curve_name(NID_X9_62_prime256v1);
    const EC_GROUP *group = ec ? EC_KEY_get0_group(ec) : NULL;
    EC_POINT *decoded = group ? EC_POINT_new(group) : NULL;
    int ok = ec && decoded
        && EC_POINT_oct2point(group, decoded, point, length, NULL) == 1
        && EC_KEY_set_public_key(ec, decoded) == 1
        && EC_KEY_check_key(ec) == 1;
    EC_POINT_free(decoded);
    if (!ok) { EC_KEY_free(ec); return NULL; }
    return portaria_p256_wrap(ec);
}

/// Writes the uncompressed public point (65 bytes) into `out`; returns 1 on success.
static inline int portaria_p256_public_point(EVP_PKEY *pkey, unsigned char out[65]) {
    const EC_KEY *ec = EVP_PKEY_get0_EC_KEY(pkey);
    if (ec == NULL) return 0;
    return EC_POINT_point2oct(EC_KEY_get0_group(ec), EC_KEY_get0_public_key(ec), POINT_CONVERSION_UNCOMPRESSED,
                              out, 65, NULL) == 65;
}

#pragma GCC diagnostic pop
#endif
