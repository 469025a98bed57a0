package auth

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509/pkix"
	"encoding/asn1"
	"errors"
	"fmt"
	"hash"
)

// An encrypted PKCS#8 key (RFC 5958, "ENCRYPTED PRIVATE KEY"), as
// openssl pkcs8 -topk8 and Kafka's PEM keystores write it: PBES2 with
// PBKDF2 and AES-CBC (RFC 8018). Older PBES1 schemes are refused.

var (
	oidPBES2      = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2     = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidHMACSHA1   = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 7}
	oidHMACSHA256 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}
	oidHMACSHA512 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 11}
	oidAES128CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 2}
	oidAES192CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 22}
	oidAES256CBC  = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}
)

type encryptedPKCS8 struct {
	Algo pkix.AlgorithmIdentifier
	Data []byte
}

type pbes2Params struct {
	KDF    pkix.AlgorithmIdentifier
	Cipher pkix.AlgorithmIdentifier
}

type pbkdf2Params struct {
	Salt       []byte
	Iterations int
	KeyLength  int                      `asn1:"optional"`
	PRF        pkix.AlgorithmIdentifier `asn1:"optional"`
}

// maxPBKDF2Iterations bounds the work a key file can ask for.
const maxPBKDF2Iterations = 10_000_000

var errBadPassword = errors.New("wrong ssl.key.password or corrupt key")

func decryptPKCS8(der, password []byte) ([]byte, error) {
	var enc encryptedPKCS8
	if rest, err := asn1.Unmarshal(der, &enc); err != nil || len(rest) > 0 {
		return nil, errors.New("not an encrypted PKCS#8 key")
	}
	if !enc.Algo.Algorithm.Equal(oidPBES2) {
		return nil, fmt.Errorf("key encryption %v is not PBES2", enc.Algo.Algorithm)
	}
	var p pbes2Params
	if _, err := asn1.Unmarshal(enc.Algo.Parameters.FullBytes, &p); err != nil {
		return nil, errors.New("malformed PBES2 parameters")
	}
	if !p.KDF.Algorithm.Equal(oidPBKDF2) {
		return nil, fmt.Errorf("key derivation %v is not PBKDF2", p.KDF.Algorithm)
	}
	var kdf pbkdf2Params
	if _, err := asn1.Unmarshal(p.KDF.Parameters.FullBytes, &kdf); err != nil {
		return nil, errors.New("malformed PBKDF2 parameters")
	}
	if kdf.Iterations < 1 || kdf.Iterations > maxPBKDF2Iterations {
		return nil, fmt.Errorf("PBKDF2 iterations %d out of range", kdf.Iterations)
	}
	var h func() hash.Hash
	switch prf := kdf.PRF.Algorithm; {
	case len(prf) == 0 || prf.Equal(oidHMACSHA1):
		h = sha1.New
	case prf.Equal(oidHMACSHA256):
		h = sha256.New
	case prf.Equal(oidHMACSHA512):
		h = sha512.New
	default:
		return nil, fmt.Errorf("PBKDF2 function %v not supported", prf)
	}
	var keyLen int
	switch c := p.Cipher.Algorithm; {
	case c.Equal(oidAES128CBC):
		keyLen = 16
	case c.Equal(oidAES192CBC):
		keyLen = 24
	case c.Equal(oidAES256CBC):
		keyLen = 32
	default:
		return nil, fmt.Errorf("key cipher %v not supported (AES-CBC only)", c)
	}
	var iv []byte
	if _, err := asn1.Unmarshal(p.Cipher.Parameters.FullBytes, &iv); err != nil || len(iv) != aes.BlockSize {
		return nil, errors.New("malformed AES-CBC parameters")
	}
	if len(enc.Data) == 0 || len(enc.Data)%aes.BlockSize != 0 {
		return nil, errBadPassword
	}
	key, err := pbkdf2.Key(h, string(password), kdf.Salt, kdf.Iterations, keyLen)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	out := make([]byte, len(enc.Data))
	cipher.NewCBCDecrypter(block, iv).CryptBlocks(out, enc.Data)
	pad := int(out[len(out)-1])
	if pad < 1 || pad > aes.BlockSize {
		return nil, errBadPassword
	}
	for _, b := range out[len(out)-pad:] {
		if int(b) != pad {
			return nil, errBadPassword
		}
	}
	return out[:len(out)-pad], nil
}
