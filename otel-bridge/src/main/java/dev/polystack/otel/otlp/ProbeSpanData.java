package dev.polystack.otel.otlp;

import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.sdk.common.InstrumentationScopeInfo;
import io.opentelemetry.sdk.resources.Resource;
import io.opentelemetry.sdk.trace.data.EventData;
import io.opentelemetry.sdk.trace.data.LinkData;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.data.StatusData;
import java.util.List;
import java.util.Objects;

/**
 * An ended root span made from a record of a call that already happened (a probe hit), handed
 * straight to an SDK {@link io.opentelemetry.sdk.trace.export.SpanExporter} by {@link ProbeSpans}
 * rather than through the SDK's tracer, whose batch processor drops spans on a full queue
 * without a count (and whose span data classes are internal). No events, no links, status
 * unset.
 */
record ProbeSpanData(String name, SpanContext spanContext, long startEpochNanos,
    long endEpochNanos, Attributes attributes, Resource resource,
    InstrumentationScopeInfo scope) implements SpanData {
  ProbeSpanData {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(spanContext, "spanContext");
    Objects.requireNonNull(attributes, "attributes");
    Objects.requireNonNull(resource, "resource");
    Objects.requireNonNull(scope, "scope");
    if (!spanContext.isValid()) {
      throw new IllegalArgumentException("span context of " + name + " is not valid");
    }
    if (endEpochNanos < startEpochNanos) {
      throw new IllegalArgumentException("span " + name + " ends (" + endEpochNanos
          + ") before it starts (" + startEpochNanos + ")");
    }
  }

  @Override
  public String getName() {
    return name;
  }

  @Override
  public SpanKind getKind() {
    return SpanKind.INTERNAL;
  }

  @Override
  public SpanContext getSpanContext() {
    return spanContext;
  }

  @Override
  public SpanContext getParentSpanContext() {
    return SpanContext.getInvalid();
  }

  @Override
  public StatusData getStatus() {
    return StatusData.unset();
  }

  @Override
  public long getStartEpochNanos() {
    return startEpochNanos;
  }

  @Override
  public Attributes getAttributes() {
    return attributes;
  }

  @Override
  public List<EventData> getEvents() {
    return List.of();
  }

  @Override
  public List<LinkData> getLinks() {
    return List.of();
  }

  @Override
  public long getEndEpochNanos() {
    return endEpochNanos;
  }

  @Override
  public boolean hasEnded() {
    return true;
  }

  @Override
  public int getTotalRecordedEvents() {
    return 0;
  }

  @Override
  public int getTotalRecordedLinks() {
    return 0;
  }

  @Override
  public int getTotalAttributeCount() {
    return attributes.size();
  }

  @Override
  @SuppressWarnings("deprecation") // still abstract in SpanData; the scope below is what exports
  public io.opentelemetry.sdk.common.InstrumentationLibraryInfo getInstrumentationLibraryInfo() {
    return io.opentelemetry.sdk.common.InstrumentationLibraryInfo.create(scope.getName(),
        scope.getVersion(), scope.getSchemaUrl());
  }

  @Override
  public InstrumentationScopeInfo getInstrumentationScopeInfo() {
    return scope;
  }

  @Override
  public Resource getResource() {
    return resource;
  }
}
