#ifndef EDGEINGEST_CCRYPTO_SHIM_H
#define EDGEINGEST_CCRYPTO_SHIM_H
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/hmac.h>

/// AES-256-GCM in one call each way. Returns 1 on success, 0 on failure
/// (for decryption: a wrong key or damaged data, as the tag does not match).
static inline int edgeingest_aes256gcm_seal(const unsigned char *key, const unsigned char *nonce,
                                            const unsigned char *plain, int plainLength,
                                            unsigned char *cipher, unsigned char *tag) {
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int ok = ctx != NULL;
    int length = 0;
    ok = ok && EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, NULL, NULL) == 1;
    ok = ok && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, 12, NULL) == 1;
    ok = ok && EVP_EncryptInit_ex(ctx, NULL, NULL, key, nonce) == 1;
    ok = ok && (plainLength == 0 || EVP_EncryptUpdate(ctx, cipher, &length, plain, plainLength) == 1);
    ok = ok && EVP_EncryptFinal_ex(ctx, cipher + length, &length) == 1;
    ok = ok && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, tag) == 1;
    EVP_CIPHER_CTX_free(ctx);
    return ok;
}

static inline int edgeingest_aes256gcm_open(const unsigned char *key, const unsigned char *nonce,
                                            const unsigned char *cipher, int cipherLength,
                                            const unsigned char *tag, unsigned char *plain) {
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    int ok = ctx != NULL;
    int length = 0;
    ok = ok && EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, NULL, NULL) == 1;
    ok = ok && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, 12, NULL) == 1;
    ok = ok && EVP_DecryptInit_ex(ctx, NULL, NULL, key, nonce) == 1;
    ok = ok && (cipherLength == 0 || EVP_DecryptUpdate(ctx, plain, &length, cipher, cipherLength) == 1);
    ok = ok && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, 16, (void *)tag) == 1;
    ok = ok && EVP_DecryptFinal_ex(ctx, plain + length, &length) == 1;
    EVP_CIPHER_CTX_free(ctx);
    return ok;
}

/// SHA-256 of `data`. Returns 1 on success.
static inline int edgeingest_sha256(const unsigned char *data, size_t length, unsigned char *digest) {
    unsigned int size = 0;
    return EVP_Digest(data, length, digest, &size, EVP_sha256(), NULL);
}

/// HMAC-SHA-256 of `data` under `key` into `mac` (32 bytes). Returns 1 on success.
static inline int edgeingest_hmac_sha256(const unsigned char *key, int keyLength, const unsigned char *data, size_t length,
                                         unsigned char *mac) {
    unsigned int size = 0;
    return HMAC(EVP_sha256(), key, keyLength, data, length, mac, &size) != NULL && size == 32;
}

/// PBKDF2-HMAC-SHA-256 (passwords of the HTTP input's users). Returns 1 on success.
/// Ed25519 (NATS NKeys): signs `message` with the private key made from
/// the 32-byte `seed` into `signature` (64 bytes) and writes the public key
/// (32 bytes) into `publicKey`. 1 on success.
static inline int edgeingest_ed25519_sign(const unsigned char *seed, const unsigned char *message, size_t length,
                                          unsigned char *signature, unsigned char *publicKey) {
    EVP_PKEY *key = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, 32);
    if (key == NULL) return 0;
    size_t publicLength = 32, signatureLength = 64;
    int ok = EVP_PKEY_get_raw_public_key(key, publicKey, &publicLength) == 1 && publicLength == 32;
    EVP_MD_CTX *context = ok ? EVP_MD_CTX_new() : NULL;
    ok = context != NULL && EVP_DigestSignInit(context, NULL, NULL, NULL, key) == 1 &&
         EVP_DigestSign(context, signature, &signatureLength, message, length) == 1 && signatureLength == 64;
    if (context != NULL) EVP_MD_CTX_free(context);
    EVP_PKEY_free(key);
    return ok;
}

static inline int edgeingest_pbkdf2_sha256(const char *password, int passwordLength, const unsigned char *salt, int saltLength,
                                           int iterations, unsigned char *out, int outLength) {
    return PKCS5_PBKDF2_HMAC(password, passwordLength, salt, saltLength, iterations, EVP_sha256(), outLength, out);
}
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <string.h>

/// The newest OpenSSL error as text into `error` (empty if there is none), and clears the queue.
static inline void edgeingest_tls_error(char *error, size_t errorLength) {
    unsigned long code = ERR_peek_last_error();
    if (error != NULL && errorLength > 0) {
        error[0] = 0;
        if (code != 0) ERR_error_string_n(code, error, errorLength);
    }
    ERR_clear_error();
}

/// A TLS client context: TLS 1.2 or newer, the peer verified against
/// `caFile` (or the system's CAs when NULL), and a client certificate chain
/// and key when `certificateFile` is set (the key from `keyFile`, or from the
/// certificate file when NULL). NULL on failure, with the reason in `error`.
static inline SSL_CTX *edgeingest_tls_client_context(const char *caFile, const char *certificateFile,
                                                     const char *keyFile, char *error, size_t errorLength) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (ctx == NULL) { edgeingest_tls_error(error, errorLength); return NULL; }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    int ok = caFile != NULL ? SSL_CTX_load_verify_locations(ctx, caFile, NULL) : SSL_CTX_set_default_verify_paths(ctx);
    if (ok == 1 && certificateFile != NULL) {
        ok = SSL_CTX_use_certificate_chain_file(ctx, certificateFile);
        ok = ok == 1 ? SSL_CTX_use_PrivateKey_file(ctx, keyFile != NULL ? keyFile : certificateFile, SSL_FILETYPE_PEM) : ok;
        ok = ok == 1 ? SSL_CTX_check_private_key(ctx) : ok;
    }
    if (ok != 1) { edgeingest_tls_error(error, errorLength); SSL_CTX_free(ctx); return NULL; }
    return ctx;
}

/// A TLS connection over `fd` to `host`, whose certificate must name it (an
/// IP address is matched against the certificate's IP entries; a name is also
/// sent as SNI). NULL on failure.
static inline SSL *edgeingest_tls_client(SSL_CTX *ctx, int fd, const char *host, int hostIsAddress) {
    SSL *ssl = SSL_new(ctx);
    if (ssl == NULL) return NULL;
    int ok = SSL_set_fd(ssl, fd);
    if (hostIsAddress) {
        ok = ok == 1 ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) : ok;
    } else {
        ok = ok == 1 ? (int)SSL_set_tlsext_host_name(ssl, host) : ok;
        ok = ok == 1 ? SSL_set1_host(ssl, host) : ok;
    }
    if (ok != 1) { SSL_free(ssl); return NULL; }
    SSL_set_connect_state(ssl);
    return ssl;
}

/// A TLS server context: TLS 1.2 or newer, the certificate chain and key
/// from `certificateFile` and `keyFile`; with `clientCAFile`, clients must
/// present a certificate that CA signed (mutual TLS). NULL on failure, with
/// the reason in `error`.
static inline SSL_CTX *edgeingest_tls_server_context(const char *certificateFile, const char *keyFile,
                                                     const char *clientCAFile, char *error, size_t errorLength) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == NULL) { edgeingest_tls_error(error, errorLength); return NULL; }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
    int ok = SSL_CTX_use_certificate_chain_file(ctx, certificateFile);
    ok = ok == 1 ? SSL_CTX_use_PrivateKey_file(ctx, keyFile, SSL_FILETYPE_PEM) : ok;
    ok = ok == 1 ? SSL_CTX_check_private_key(ctx) : ok;
    if (ok == 1 && clientCAFile != NULL) {
        ok = SSL_CTX_load_verify_locations(ctx, clientCAFile, NULL);
        if (ok == 1) {
            STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(clientCAFile);
            if (names != NULL) SSL_CTX_set_client_CA_list(ctx, names);
            SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
        }
    }
    if (ok != 1) { edgeingest_tls_error(error, errorLength); SSL_CTX_free(ctx); return NULL; }
    return ctx;
}

/// A server-side TLS connection over the accepted socket `fd`; NULL on failure.
static inline SSL *edgeingest_tls_server(SSL_CTX *ctx, int fd) {
    SSL *ssl = SSL_new(ctx);
    if (ssl == NULL) return NULL;
    if (SSL_set_fd(ssl, fd) != 1) { SSL_free(ssl); return NULL; }
    SSL_set_accept_state(ssl);
    return ssl;
}

/// The common name of the peer's verified certificate into `out`; its
/// length, or -1 when there is no certificate or no common name.
static inline int edgeingest_tls_peer_common_name(SSL *ssl, char *out, int outLength) {
    X509 *certificate = SSL_get1_peer_certificate(ssl);
    if (certificate == NULL) return -1;
    int length = -1;
    if (SSL_get_verify_result(ssl) == X509_V_OK) {
        length = X509_NAME_get_text_by_NID(X509_get_subject_name(certificate), NID_commonName, out, outLength);
    }
    X509_free(certificate);
    return length;
}

/// Whether the first certificate in `certificateFile` (PEM) and the key in
/// `keyFile` belong together: 1 yes, 0 no or unreadable, with the reason in
/// `error` (`check-config`).
static inline int edgeingest_tls_check_pair(const char *certificateFile, const char *keyFile, char *error,
                                            size_t errorLength) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_method());
    if (ctx == NULL) { edgeingest_tls_error(error, errorLength); return 0; }
    int ok = SSL_CTX_use_certificate_chain_file(ctx, certificateFile);
    ok = ok == 1 ? SSL_CTX_use_PrivateKey_file(ctx, keyFile, SSL_FILETYPE_PEM) : ok;
    ok = ok == 1 ? SSL_CTX_check_private_key(ctx) : ok;
    if (ok != 1) edgeingest_tls_error(error, errorLength);
    SSL_CTX_free(ctx);
    return ok == 1;
}

/// Seconds from now until the first certificate in `file` (PEM) expires
/// (negative once it has); 0 with *readable = 0 when it cannot be read.
static inline long long edgeingest_tls_seconds_left(const char *file, int *readable) {
    *readable = 0;
    FILE *f = fopen(file, "r");
    if (f == NULL) return 0;
    X509 *certificate = PEM_read_X509(f, NULL, NULL, NULL);
    fclose(f);
    if (certificate == NULL) { ERR_clear_error(); return 0; }
    int days = 0, seconds = 0;
    int ok = ASN1_TIME_diff(&days, &seconds, NULL, X509_get0_notAfter(certificate));
    X509_free(certificate);
    if (ok != 1) return 0;
    *readable = 1;
    return (long long)days * 86400 + seconds;
}

/// Why the peer's certificate was refused, if it was ("" otherwise).
static inline const char *edgeingest_tls_verify_error(SSL *ssl) {
    long result = SSL_get_verify_result(ssl);
    return result == X509_V_OK ? "" : X509_verify_cert_error_string(result);
}
#endif
