package polystackreceiver

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding/gzip"
)

// roleVar makes the test binary play a part in a child process instead of running tests.
const roleVar = "POLYSTACK_RECEIVER_TEST_ROLE"

// TestMain runs the test binary as one of the real processes the tests need:
//   - "agent": a stand-in for `polystack agent` that speaks OTLP gRPC to --otlp-endpoint;
//   - "collector": a process that supervises the command in its arguments and never shuts it
//     down, to be SIGKILLed like a crashed Collector.
func TestMain(m *testing.M) {
	switch os.Getenv(roleVar) {
	case "agent":
		os.Exit(fakeAgent(os.Args[1:]))
	case "collector":
		os.Exit(crashingCollector(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// fakeAgent sends one profiles and one metrics request, then waits for SIGTERM and sends a
// last profiles request marked final, as the agent flushes its last interval, and exits 0.
// Its resource has process.pid = its own pid. It checks the arguments the receiver must pass.
func fakeAgent(args []string) int {
	flags := flag.NewFlagSet("agent", flag.ContinueOnError)
	endpoint := flags.String("otlp-endpoint", "", "")
	protocol := flags.String("otlp-protocol", "", "")
	rate := flags.Int("rate", 0, "")
	flags.String("export-interval", "", "")
	if len(args) == 0 || args[0] != "agent" {
		fmt.Fprintln(os.Stderr, "fake agent: the first argument must be 'agent'")
		return 2
	}
	if err := flags.Parse(args[1:]); err != nil || *protocol != "grpc" || !strings.HasPrefix(*endpoint, "http://127.0.0.1:") {
		fmt.Fprintf(os.Stderr, "fake agent: bad arguments %q\n", args)
		return 2
	}
	terminated := make(chan os.Signal, 1)
	signal.Notify(terminated, syscall.SIGTERM)
	fmt.Fprintf(os.Stderr, "polystack: agent: profiling every process at %d Hz per CPU, exporting every 10s to %s\n", *rate, *endpoint)

	conn, err := grpc.NewClient(strings.TrimPrefix(*endpoint, "http://"),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.UseCompressor(gzip.Name)))
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake agent:", err)
		return 1
	}
	defer conn.Close()
	profiles := pprofileotlp.NewGRPCClient(conn)
	metrics := pmetricotlp.NewGRPCClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := profiles.Export(ctx, pprofileotlp.NewExportRequestFromProfiles(testProfiles(false)), grpc.WaitForReady(true)); err != nil {
		fmt.Fprintln(os.Stderr, "fake agent: profiles:", err)
		return 1
	}
	if _, err := metrics.Export(ctx, pmetricotlp.NewExportRequestFromMetrics(testMetrics())); err != nil {
		fmt.Fprintln(os.Stderr, "fake agent: metrics:", err)
		return 1
	}
	<-terminated
	if _, err := profiles.Export(ctx, pprofileotlp.NewExportRequestFromProfiles(testProfiles(true))); err != nil {
		fmt.Fprintln(os.Stderr, "fake agent: last profiles:", err)
		return 1
	}
	return 0
}

func testProfiles(final bool) pprofile.Profiles {
	pd := pprofile.NewProfiles()
	rp := pd.ResourceProfiles().AppendEmpty()
	rp.Resource().Attributes().PutInt("process.pid", int64(os.Getpid()))
	rp.Resource().Attributes().PutBool("final", final)
	profile := rp.ScopeProfiles().AppendEmpty().Profiles().AppendEmpty()
	for range 3 {
		profile.Samples().AppendEmpty().TimestampsUnixNano().Append(uint64(time.Now().UnixNano()))
	}
	return pd
}

func testMetrics() pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutInt("process.pid", int64(os.Getpid()))
	sum := rm.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	sum.SetName("polystack.samples")
	point := sum.SetEmptySum().DataPoints().AppendEmpty()
	point.SetIntValue(3)
	point.SetTimestamp(pcommon.NewTimestampFromTime(time.Now()))
	return md
}

// crashingCollector supervises `args[0] args[1:]`, prints the child's pid on stdout, and
// blocks until it is killed.
func crashingCollector(args []string) int {
	s := newSupervisor(zap.NewNop(), childSpec{path: args[0], args: args[1:], env: os.Environ()},
		RestartConfig{InitialInterval: time.Second, MaxInterval: time.Second, StableAfter: time.Second},
		func(error) {})
	if err := s.start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(strconv.Itoa(s.currentPID()))
	select {}
}

// alive says whether process pid exists and is not a zombie waiting to be reaped.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and may hold spaces.
	rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
	return !strings.HasPrefix(strings.TrimSpace(rest), "Z")
}

// await polls cond until it holds or the deadline passes, then fails the test with what.
func await(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
