#ifndef PORTARIA_CNGHTTP2_SHIM_H
#define PORTARIA_CNGHTTP2_SHIM_H
/* libnghttp2: HTTP/2 framing, HPACK, stream and flow-control state for the push client.
   The socket and TLS around it are ours (OpenSSL through COpenSSL). */
#include <nghttp2/nghttp2.h>
#include <sys/socket.h>

/* The socket types of the connection under a session. Spelled here: in a whole-module
   (release) build of PortariaServer, Swift did not find Glibc's SOCK_* in the files that
   open these sockets. */
static inline int portaria_h2_socket_type(void) { return SOCK_STREAM; }
static inline int portaria_h2_socket_flags(void) { return SOCK_NONBLOCK | SOCK_CLOEXEC; }
#endif
