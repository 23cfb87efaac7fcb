#ifndef PORTARIA_COPENSSL_SHIM_H
#define PORTARIA_COPENSSL_SHIM_H
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <openssl/rand.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#endif
