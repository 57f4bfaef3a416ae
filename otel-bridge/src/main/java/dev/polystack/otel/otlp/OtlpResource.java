package dev.polystack.otel.otlp;

import dev.polystack.otel.model.TargetInfo;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.common.AttributesBuilder;
import io.opentelemetry.proto.common.v1.AnyValue;
import io.opentelemetry.proto.common.v1.InstrumentationScope;
import io.opentelemetry.proto.common.v1.KeyValue;
import io.opentelemetry.proto.resource.v1.Resource;
import java.io.IOException;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The resource every signal of one session carries: the profiled process, not polystack.
 *
 * <p>{@code service.name} is OTEL_SERVICE_NAME, else {@code service.name} from
 * OTEL_RESOURCE_ATTRIBUTES, else {@code unknown_service:<executable name>}: what the target's own
 * OpenTelemetry SDK reports when it is not configured, so its profiles and its own telemetry
 * land on the same service.
 *
 * @param attributes String or Long values by key, in a stable order
 */
public record OtlpResource(Map<String, Object> attributes) {
  public OtlpResource {
    for (Map.Entry<String, Object> e : attributes.entrySet()) {
      if (!(e.getValue() instanceof String) && !(e.getValue() instanceof Long)) {
        throw new IllegalArgumentException("resource attribute " + e.getKey()
            + " must be a String or a Long");
      }
    }
    attributes = Collections.unmodifiableMap(new LinkedHashMap<>(attributes));
  }

  /** The instrumentation scope of everything polystack emits. */
  public static final String SCOPE_NAME = "polystack";

  /** The resource of {@code target} under {@code config}. */
  public static OtlpResource forTarget(TargetInfo target, OtlpConfig config) {
    Map<String, Object> a = new LinkedHashMap<>();
    String service = config.serviceName().isEmpty()
        ? config.resourceAttributes().getOrDefault("service.name", "")
        : config.serviceName();
    a.put("service.name", service.isEmpty()
        ? "unknown_service:" + target.executableName() : service);
    a.put("process.pid", (long) target.pid());
    a.put("process.executable.name", target.executableName());
    if (!target.executablePath().isEmpty()) {
      a.put("process.executable.path", target.executablePath());
    }
    a.put("host.name", hostName());
    config.resourceAttributes().forEach(a::putIfAbsent);
    return new OtlpResource(a);
  }

  public String serviceName() {
    return (String) attributes.get("service.name");
  }

  /** For profiles: inline keys and values (collectors mishandle key_strindex here). */
  public Resource toProto() {
    Resource.Builder b = Resource.newBuilder();
    attributes.forEach((k, v) -> b.addAttributes(KeyValue.newBuilder().setKey(k).setValue(
        v instanceof Long l ? AnyValue.newBuilder().setIntValue(l)
            : AnyValue.newBuilder().setStringValue((String) v))));
    return b.build();
  }

  /** For spans and metrics through the SDK. */
  public io.opentelemetry.sdk.resources.Resource toSdk() {
    AttributesBuilder b = Attributes.builder();
    attributes.forEach((k, v) -> {
      if (v instanceof Long l) {
        b.put(k, l);
      } else {
        b.put(k, (String) v);
      }
    });
    return io.opentelemetry.sdk.resources.Resource.create(b.build());
  }

  /** polystack and its version, inline as well. */
  public static InstrumentationScope scope() {
    return InstrumentationScope.newBuilder().setName(SCOPE_NAME).setVersion(version()).build();
  }

  /** The polystack version from the jar manifest, or {@code development} in a build tree. */
  public static String version() {
    String v = OtlpResource.class.getPackage().getImplementationVersion();
    return v == null ? "development" : v;
  }

  static String hostName() {
    try {
      String name = Files.readString(Path.of("/proc/sys/kernel/hostname")).trim();
      if (!name.isEmpty()) {
        return name;
      }
    } catch (IOException e) {
      // fall through to the resolver
    }
    try {
      return InetAddress.getLocalHost().getHostName();
    } catch (IOException e) {
      return "localhost";
    }
  }
}
