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
static inline int edgeingest_pbkdf2_sha256(const char *password, int passwordLength, const unsigned char *salt, int saltLength,
                                           int iterations, unsigned char *out, int outLength) {
    return PKCS5_PBKDF2_HMAC(password, passwordLength, salt, saltLength, iterations, EVP_sha256(), outLength, out);
}
#endif
