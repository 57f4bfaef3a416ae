// Package polystackreceiver is an OpenTelemetry Collector receiver that runs `polystack agent`
// as a child process and passes on the profiles and health metrics it sends to a private OTLP
// endpoint on loopback. docs/otlp.md, "Running the agent inside a Collector", documents it.
package polystackreceiver

import (
	"context"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/xconsumer"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/xreceiver"
)

// typeStr is the receiver's name in a Collector configuration: `receivers: [polystack]`.
var typeStr = component.MustNewType("polystack")

// NewFactory is the receiver's factory, to register in a Collector distribution.
func NewFactory() xreceiver.Factory {
	f := &factory{receivers: map[*Config]*polystackReceiver{}}
	return xreceiver.NewFactory(typeStr,
		func() component.Config { return createDefaultConfig() },
		xreceiver.WithProfiles(f.createProfiles, component.StabilityLevelDevelopment),
		xreceiver.WithMetrics(f.createMetrics, component.StabilityLevelDevelopment))
}

// factory shares one receiver (one agent) between the profiles and metrics pipelines that name
// the same receiver: the Collector creates it once per pipeline type with the same *Config.
type factory struct {
	mu        sync.Mutex
	receivers map[*Config]*polystackReceiver
}

func (f *factory) createProfiles(_ context.Context, set receiver.Settings, cfg component.Config,
	next xconsumer.Profiles) (xreceiver.Profiles, error) {
	r, err := f.shared(set, cfg.(*Config))
	if err != nil {
		return nil, err
	}
	r.setProfiles(next)
	return r, nil
}

func (f *factory) createMetrics(_ context.Context, set receiver.Settings, cfg component.Config,
	next consumer.Metrics) (receiver.Metrics, error) {
	r, err := f.shared(set, cfg.(*Config))
	if err != nil {
		return nil, err
	}
	r.setMetrics(next)
	return r, nil
}

func (f *factory) shared(set receiver.Settings, cfg *Config) (*polystackReceiver, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r, ok := f.receivers[cfg]; ok {
		return r, nil
	}
	r, err := newReceiver(set, cfg, func() { f.forget(cfg) })
	if err != nil {
		return nil, err
	}
	f.receivers[cfg] = r
	return r, nil
}

func (f *factory) forget(cfg *Config) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.receivers, cfg)
}
