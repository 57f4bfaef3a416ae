package polystackreceiver

import (
	"context"
	"os"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/receiver/receivertest"
)

// fakeAgentConfig runs this test binary as the agent (TestMain's "agent" role).
func fakeAgentConfig(t *testing.T) *Config {
	t.Helper()
	t.Setenv(roleVar, "agent")
	cfg := createDefaultConfig()
	cfg.Executable = os.Args[0]
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func pidOf(resource pcommon.Resource) int64 {
	v, ok := resource.Attributes().Get("process.pid")
	if !ok {
		return -1
	}
	return v.Int()
}

// finalProfiles counts the resources marked final (sent by the agent after SIGTERM).
func finalProfiles(all []pprofile.Profiles) int {
	n := 0
	for _, pd := range all {
		for i := 0; i < pd.ResourceProfiles().Len(); i++ {
			if v, ok := pd.ResourceProfiles().At(i).Resource().Attributes().Get("final"); ok && v.Bool() {
				n++
			}
		}
	}
	return n
}

func TestProfilesAndMetricsPipelinesShareOneAgent(t *testing.T) {
	cfg := fakeAgentConfig(t)
	factory := NewFactory()
	set := receivertest.NewNopSettings(factory.Type())
	profilesSink, metricsSink := new(consumertest.ProfilesSink), new(consumertest.MetricsSink)
	profiles, err := factory.CreateProfiles(context.Background(), set, cfg, profilesSink)
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := factory.CreateMetrics(context.Background(), set, cfg, metricsSink)
	if err != nil {
		t.Fatal(err)
	}
	if profiles != metrics {
		t.Fatal("the profiles and metrics receivers of one config are two instances: two agents would run")
	}
	host := componenttest.NewNopHost()
	for _, r := range []component.Component{profiles, metrics} {
		if err := r.Start(context.Background(), host); err != nil {
			t.Fatal(err)
		}
	}
	agent := profiles.(*polystackReceiver).agent
	pid := agent.currentPID()

	await(t, "profiles and metrics from the agent", func() bool {
		return profilesSink.SampleCount() >= 3 && metricsSink.DataPointCount() >= 1
	})
	if got := pidOf(profilesSink.AllProfiles()[0].ResourceProfiles().At(0).Resource()); got != int64(pid) {
		t.Errorf("profiles from pid %d, want the agent's %d", got, pid)
	}
	if got := metricsSink.AllMetrics()[0].ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Name(); got != "polystack.samples" {
		t.Errorf("metric %q", got)
	}

	for _, r := range []component.Component{profiles, metrics} {
		if err := r.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if finalProfiles(profilesSink.AllProfiles()) != 1 {
		t.Errorf("the agent's last interval, sent after SIGTERM, did not reach the pipeline")
	}
	if alive(pid) {
		t.Errorf("agent %d still there after shutdown", pid)
	}
	if agent.restartCount() != 0 {
		t.Errorf("agent restarted %d times", agent.restartCount())
	}
	// A new receiver for the same config after shutdown is a new instance.
	again, err := factory.CreateProfiles(context.Background(), set, cfg, profilesSink)
	if err != nil {
		t.Fatal(err)
	}
	if again == profiles {
		t.Error("a shut down receiver was handed out again")
	}
}

func TestReceiverInAProfilesPipelineOnly(t *testing.T) {
	cfg := fakeAgentConfig(t)
	factory := NewFactory()
	sink := new(consumertest.ProfilesSink)
	r, err := factory.CreateProfiles(context.Background(), receivertest.NewNopSettings(factory.Type()), cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	agent := r.(*polystackReceiver).agent
	// The fake agent exits 1 if its metrics request fails, which the supervisor would restart.
	await(t, "profiles", func() bool { return sink.SampleCount() >= 3 })
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if agent.restartCount() != 0 || len(sink.AllProfiles()) != 2 {
		t.Errorf("%d restarts, %d profiles requests; want 0 and 2 (the first and the last)",
			agent.restartCount(), len(sink.AllProfiles()))
	}
}

func TestReceiverInAMetricsPipelineOnly(t *testing.T) {
	cfg := fakeAgentConfig(t)
	factory := NewFactory()
	sink := new(consumertest.MetricsSink)
	r, err := factory.CreateMetrics(context.Background(), receivertest.NewNopSettings(factory.Type()), cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	await(t, "metrics", func() bool { return sink.DataPointCount() >= 1 })
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := r.(*polystackReceiver).agent.restartCount(); n != 0 {
		t.Errorf("%d restarts: the agent's profiles were refused", n)
	}
}

func TestStartFailsWhenTheExecutableIsGone(t *testing.T) {
	cfg := createDefaultConfig()
	cfg.Executable = launcher(t)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(cfg.Executable); err != nil {
		t.Fatal(err)
	}
	factory := NewFactory()
	r, err := factory.CreateProfiles(context.Background(), receivertest.NewNopSettings(factory.Type()), cfg, new(consumertest.ProfilesSink))
	if err != nil {
		t.Fatal(err)
	}
	err = r.Start(context.Background(), componenttest.NewNopHost())
	if err == nil || err.Error() != "executable: "+cfg.Executable+": no such file or directory" {
		t.Errorf("start error %v", err)
	}
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestAgentThatRejectsItsArgumentsFailsStart(t *testing.T) {
	cfg := fakeAgentConfig(t)
	cfg.ExtraArgs = []string{"--bogus"}
	factory := NewFactory()
	r, err := factory.CreateProfiles(context.Background(), receivertest.NewNopSettings(factory.Type()), cfg, new(consumertest.ProfilesSink))
	if err != nil {
		t.Fatal(err)
	}
	err = r.Start(context.Background(), componenttest.NewNopHost())
	want := "polystack agent exited before it started profiling (exit status 2): fake agent: bad arguments"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("start error %v, want %q...", err, want)
	}
	if err := r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}
