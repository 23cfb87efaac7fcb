// OpenSSL 3.0 + LeakSanitizer: a thread that exits after libcrypto's atexit cleanup loses
// its DRBGs (decision 0053; the report once seen at a `portaria serve`'s exit).
//   clang -fsanitize=address lsan-openssl-thread-exit.c -o repro -lcrypto -lpthread
//   ./repro 0   # 2 direct leaks of 40 bytes (EVP_RAND_CTX from RAND_get0_public and
//               # RAND_get0_private), stack cut at CRYPTO_zalloc with the fast unwinder
//   ./repro 1   # OPENSSL_INIT_NO_ATEXIT first (Crypto.skipCleanupAtExit): none
//   ./repro 2   # the thread joined before exit (HTTP2Client.shutdown): none
// OPENSSL_cleanup (atexit) frees every thread's stop handlers without running them and
// deletes the thread-local keys; a thread still on its way out then exits without
// OpenSSL's destructor, and its two DRBGs are referenced from nowhere. The sleep in
// `late_exit` stands in for the rest of exit() on a loaded machine.
#include <openssl/crypto.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdlib.h>
#include <unistd.h>

static sem_t used;

static void *worker(void *arg) {
    (void)arg;
    unsigned char bytes[16];
    RAND_bytes(bytes, sizeof bytes);       // this thread's public DRBG
    RAND_priv_bytes(bytes, sizeof bytes);  // and its private one (TLS key shares, ECDSA nonces)
    sem_post(&used);                       // "finished", signalled from inside the thread
    usleep(200 * 1000);                    // still on its way out
    return NULL;
}

static void late_exit(void) { usleep(600 * 1000); }  // runs after OPENSSL_cleanup

int main(int argc, char **argv) {
    int mode = argc > 1 ? atoi(argv[1]) : 0;
    atexit(late_exit);  // registered before libcrypto's, so it runs after it
    if (mode == 1) OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL);
    unsigned char bytes[16];
    RAND_bytes(bytes, sizeof bytes);  // global state set up on the main thread, as in the server
    RAND_priv_bytes(bytes, sizeof bytes);
    sem_init(&used, 0, 0);
    pthread_t thread;
    pthread_create(&thread, NULL, worker, NULL);
    sem_wait(&used);
    if (mode == 2) pthread_join(thread, NULL);
    exit(0);
}
