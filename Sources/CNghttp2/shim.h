#ifndef PORTARIA_CNGHTTP2_SHIM_H
#define PORTARIA_CNGHTTP2_SHIM_H
/* libnghttp2: HTTP/2 framing, HPACK, stream and flow-control state for the push client.
   The socket and TLS around it are ours (OpenSSL through COpenSSL). */
#include <nghttp2/nghttp2.h>
#endif
