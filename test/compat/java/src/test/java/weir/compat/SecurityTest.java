package weir.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.BitSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.config.SslConfigs;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.SslAuthenticationException;
import org.junit.jupiter.api.Test;

/**
 * The Java client 4.3 against listeners that ask for TLS and SASL: SASL_SSL with
 * SCRAM-SHA-512 (PKCS12 truststore) and SSL with a client certificate (PKCS12
 * keystore), and the refusals of a wrong password and of a missing certificate. The
 * brokers come from test/compat/security/brokers, through the security suite.
 */
class SecurityTest {
    static String env(String name) {
        String v = System.getenv(name);
        if (v == null || v.isBlank()) {
            throw new AssertionError(name + " is not set: run this through test/compat/run --only security");
        }
        return v.trim();
    }

    static Path pki(String file) {
        return Path.of(env("WEIR_SECURITY_DIR"), file);
    }

    /** Client security properties: a PKCS12 truststore holding the suite's CA. */
    static Properties trusting(String bootstrap, String protocol) {
        Properties p = new Properties();
        p.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, protocol);
        p.put(SslConfigs.SSL_TRUSTSTORE_TYPE_CONFIG, "PKCS12");
        p.put(SslConfigs.SSL_TRUSTSTORE_LOCATION_CONFIG, pki("truststore.p12").toString());
        p.put(SslConfigs.SSL_TRUSTSTORE_PASSWORD_CONFIG, "truststore-pw");
        return p;
    }

    static Properties scram(String password) {
        Properties p = trusting(env("WEIR_SASL_SSL_BOOTSTRAP"), "SASL_SSL");
        p.put(SaslConfigs.SASL_MECHANISM, "SCRAM-SHA-512");
        p.put(SaslConfigs.SASL_JAAS_CONFIG, "org.apache.kafka.common.security.scram.ScramLoginModule required"
                + " username=\"alice\" password=\"" + password + "\";");
        return p;
    }

    static Properties clientCertificate(String who) {
        Properties p = trusting(env("WEIR_SSL_BOOTSTRAP"), "SSL");
        if (who != null) {
            p.put(SslConfigs.SSL_KEYSTORE_TYPE_CONFIG, "PKCS12");
            p.put(SslConfigs.SSL_KEYSTORE_LOCATION_CONFIG, pki(who + ".p12").toString());
            p.put(SslConfigs.SSL_KEYSTORE_PASSWORD_CONFIG, who + "-pw");
        }
        return p;
    }

    static Properties with(Properties base, Properties more) {
        Properties p = new Properties();
        p.putAll(more);
        p.putAll(base);
        return p;
    }

    /** Produces n records idempotently and reads each back exactly once with a group consumer. */
    static void roundTrip(Properties security) throws Exception {
        int n = 2000;
        Properties adminProps = with(security, new Properties());
        adminProps.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30000);
        try (Admin admin = Admin.create(adminProps)) {
            String topic = Compat.createTopic(admin, "security", 3, Map.of());
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(with(security, Compat.producerProps("none")))) {
                for (int i = 0; i < n; i++) {
                    producer.send(Compat.record(topic, i));
                }
                producer.flush();
            }
            BitSet seen = new BitSet(n);
            try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(with(security, Compat.consumerProps(Compat.name("g"))))) {
                consumer.subscribe(List.of(topic));
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (seen.cardinality() < n && System.nanoTime() < deadline) {
                    for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                        int i = Compat.check(r);
                        assertTrue(!seen.get(i), "record " + i + " delivered twice");
                        seen.set(i);
                    }
                }
            }
            assertEquals(n, seen.cardinality(), "records read back");
        }
    }

    /** What listing topics fails with under these properties. */
    static Throwable refusal(Properties security) {
        Properties p = with(security, new Properties());
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 15000);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10000);
        try (Admin admin = Admin.create(p)) {
            ExecutionException e = assertThrows(ExecutionException.class,
                    () -> admin.listTopics().names().get(30, TimeUnit.SECONDS));
            return e.getCause();
        }
    }

    @Test
    void saslSslScramSha512() throws Exception {
        roundTrip(scram("alice-secret"));
    }

    @Test
    void saslSslWrongPassword() {
        Throwable t = refusal(scram("not-the-password"));
        assertInstanceOf(SaslAuthenticationException.class, t, "cause: " + t);
    }

    @Test
    void sslClientCertificate() throws Exception {
        roundTrip(clientCertificate("alice"));
    }

    @Test
    void sslWithoutClientCertificate() {
        Throwable t = refusal(clientCertificate(null));
        assertInstanceOf(SslAuthenticationException.class, t, "cause: " + t);
    }
}
