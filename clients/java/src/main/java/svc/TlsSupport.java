package svc;

import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509ExtendedTrustManager;

/** One TLS context per client: the system trust store, a PEM CA file, or (tests only) no verification. */
final class TlsSupport {
    private TlsSupport() {
    }

    static SSLContext context(String caCertFile, boolean disableVerification) {
        try {
            SSLContext context = SSLContext.getInstance("TLS");
            if (disableVerification) {
                context.init(null, new TrustManager[] { new TrustAll() }, null);
            } else if (caCertFile != null && !caCertFile.isEmpty()) {
                KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
                store.load(null, null);
                try (InputStream in = Files.newInputStream(Paths.get(caCertFile))) {
                    int i = 0;
                    for (Certificate cert : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
                        store.setCertificateEntry("ca-" + i++, cert);
                    }
                }
                TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
                tmf.init(store);
                context.init(null, tmf.getTrustManagers(), null);
            } else {
                context = SSLContext.getDefault();
            }
            return context;
        } catch (IOException | GeneralSecurityException e) {
            throw new IllegalArgumentException("cannot set up TLS with the CA file " + caCertFile + ": " + e.getMessage(),
                    e);
        }
    }

    /** Accepts any certificate and host name: for {@code disableSSLVerify()} only. */
    private static final class TrustAll extends X509ExtendedTrustManager {
        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType) {
        }

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType) {
        }

        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType, Socket socket) {
        }

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType, Socket socket) {
        }

        @Override
        public void checkClientTrusted(X509Certificate[] chain, String authType, SSLEngine engine) {
        }

        @Override
        public void checkServerTrusted(X509Certificate[] chain, String authType, SSLEngine engine) {
        }

        @Override
        public X509Certificate[] getAcceptedIssuers() {
            return new X509Certificate[0];
        }
    }
}
