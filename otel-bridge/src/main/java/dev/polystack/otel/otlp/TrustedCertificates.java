package dev.polystack.otel.otlp;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.util.Collection;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * The certificate authorities of a PEM file (OTEL_EXPORTER_OTLP_CERTIFICATE, --otlp-ca-file),
 * trusted instead of the JDK's store: what a Collector with its own CA needs. Read once, bounded
 * and checked up front, so that a wrong file is a one-line usage error rather than a failed
 * handshake at the first export.
 *
 * @param file where the PEM came from, for messages
 * @param pem the file's bytes: at least one X.509 certificate
 */
record TrustedCertificates(Path file, byte[] pem) {
  /** A CA bundle is a few KiB; anything far larger is not one. */
  static final long MAX_BYTES = 1 << 20;

  /**
   * @throws IllegalArgumentException naming the file and what is wrong with it
   */
  static TrustedCertificates load(Path file) {
    byte[] bytes;
    try {
      if (Files.size(file) > MAX_BYTES) {
        throw new IllegalArgumentException("CA file " + file + " is larger than 1 MiB: not a"
            + " PEM certificate bundle");
      }
      bytes = Files.readAllBytes(file);
    } catch (NoSuchFileException e) {
      throw new IllegalArgumentException("CA file " + file + " does not exist");
    } catch (IOException e) {
      throw new IllegalArgumentException("cannot read CA file " + file + ": " + e.getMessage());
    }
    TrustedCertificates t = new TrustedCertificates(file, bytes);
    if (t.certificates().isEmpty()) {
      throw new IllegalArgumentException("CA file " + file + " holds no PEM certificate");
    }
    return t;
  }

  private Collection<? extends Certificate> certificates() {
    try {
      return CertificateFactory.getInstance("X.509")
          .generateCertificates(new ByteArrayInputStream(pem));
    } catch (CertificateException e) {
      throw new IllegalArgumentException("CA file " + file + " is not PEM X.509: "
          + e.getMessage());
    }
  }

  /**
   * Why a TLS handshake failed, if {@code t} or one of its causes is a handshake failure: a
   * final answer (retrying cannot make an untrusted certificate trusted), else null.
   */
  static String handshakeFailure(Throwable t) {
    for (int depth = 0; t != null && depth < 10; depth++, t = t.getCause()) {
      if (t instanceof javax.net.ssl.SSLHandshakeException) {
        String m = t.getMessage() == null ? t.toString() : t.getMessage();
        return m.contains("PKIX") || m.contains("certificat")
            ? "TLS handshake failed, the receiver's certificate is not trusted (" + m + ")"
            : "TLS handshake failed: " + m;
      }
    }
    return null;
  }

  /** An SSLContext that trusts exactly these CAs (for the JDK HttpClient). */
  SSLContext sslContext() {
    try {
      KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
      store.load(null, null);
      int i = 0;
      for (Certificate c : certificates()) {
        store.setCertificateEntry("ca-" + i++, c);
      }
      TrustManagerFactory tmf = TrustManagerFactory.getInstance(
          TrustManagerFactory.getDefaultAlgorithm());
      tmf.init(store);
      SSLContext ctx = SSLContext.getInstance("TLS");
      ctx.init(null, tmf.getTrustManagers(), null);
      return ctx;
    } catch (GeneralSecurityException | IOException e) {
      throw new IllegalArgumentException("cannot use CA file " + file + ": " + e.getMessage());
    }
  }
}
