package auth

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"strings"
	"testing"
)

// encryptPKCS8 writes what openssl pkcs8 -topk8 -v2 aes-256-cbc
// -v2prf hmacWithSHA256 writes.
func encryptPKCS8(t testing.TB, der []byte, password string) []byte {
	t.Helper()
	salt, iv := make([]byte, 16), make([]byte, 16)
	rand.Read(salt)
	rand.Read(iv)
	key, err := pbkdf2.Key(sha256.New, password, salt, 2048, 32)
	if err != nil {
		t.Fatal(err)
	}
	pad := 16 - len(der)%16
	plain := append(append([]byte{}, der...), make([]byte, pad)...)
	for i := len(der); i < len(plain); i++ {
		plain[i] = byte(pad)
	}
	block, _ := aes.NewCipher(key)
	out := make([]byte, len(plain))
	cipher.NewCBCEncrypter(block, iv).CryptBlocks(out, plain)
	must := func(v any) asn1.RawValue {
		b, err := asn1.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return asn1.RawValue{FullBytes: b}
	}
	kdf := pkix.AlgorithmIdentifier{Algorithm: oidPBKDF2, Parameters: must(struct {
		Salt       []byte
		Iterations int
		PRF        pkix.AlgorithmIdentifier
	}{salt, 2048, pkix.AlgorithmIdentifier{Algorithm: oidHMACSHA256, Parameters: asn1.NullRawValue}})}
	enc := pkix.AlgorithmIdentifier{Algorithm: oidAES256CBC, Parameters: must(iv)}
	b, err := asn1.Marshal(encryptedPKCS8{
		Algo: pkix.AlgorithmIdentifier{Algorithm: oidPBES2, Parameters: must(pbes2Params{KDF: kdf, Cipher: enc})},
		Data: out,
	})
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: b})
}

func TestEncryptedPEMKey(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	encPEM := encryptPKCS8(t, der, "key-pw")
	got, err := pemPrivateKey(encPEM, "key-pw")
	if err != nil {
		t.Fatal(err)
	}
	if !got.(*ecdsa.PrivateKey).Equal(key) {
		t.Fatal("decrypted another key")
	}
	if _, err := pemPrivateKey(encPEM, "wrong"); err == nil {
		t.Fatal("wrong password accepted")
	}
	if _, err := pemPrivateKey(encPEM, ""); err == nil || !strings.Contains(err.Error(), "set ssl.key.password") {
		t.Fatalf("no password: %v", err)
	}
	plain := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	if _, err := pemPrivateKey(plain, "key-pw"); err == nil {
		t.Fatal("a password for a plain key accepted, as Kafka refuses it")
	}
}

func FuzzDecryptPKCS8(f *testing.F) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	b, _ := pem.Decode(encryptPKCS8(f, der, "pw"))
	f.Add(b.Bytes, "pw")
	f.Add([]byte{0x30, 0x03, 0x02, 0x01, 0x01}, "")
	f.Fuzz(func(t *testing.T, data []byte, pw string) {
		decryptPKCS8(data, []byte(pw))
	})
}
