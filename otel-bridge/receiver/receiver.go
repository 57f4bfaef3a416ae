package polystackreceiver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/consumer/xconsumer"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	_ "google.golang.org/grpc/encoding/gzip" // the agent compresses its requests with gzip
	"google.golang.org/grpc/status"
)

const (
	// maxRequestBytes bounds one request from the agent; the agent caps what one interval holds.
	maxRequestBytes = 64 << 20
	// serverStopTimeout bounds the wait for requests in flight when the receiver stops.
	serverStopTimeout = 5 * time.Second

	// startupTimeout bounds how long Start waits for that line: a JVM starts in seconds.
	startupTimeout = time.Minute
)

// agentStartedPrefixes start the line the agent prints on stderr once it is profiling:
// "polystack: agent: profiling every process at 20 Hz per CPU, exporting every 10s to URL"
// (the CLI contract writes it "polystack agent: profiling ...": both are taken).
var agentStartedPrefixes = []string{"polystack: agent: profiling ", "polystack agent: profiling "}

// polystackReceiver runs one agent and one private OTLP gRPC server for it, shared by the
// profiles and metrics pipelines that name the receiver.
type polystackReceiver struct {
	settings receiver.Settings
	cfg      *Config
	forget   func()
	obs      *receiverhelper.ObsReport

	mu       sync.Mutex
	profiles xconsumer.Profiles
	metrics  consumer.Metrics

	startOnce    sync.Once
	startErr     error
	shutdownOnce sync.Once
	server       *grpc.Server
	agent        *supervisor
}

func newReceiver(set receiver.Settings, cfg *Config, forget func()) (*polystackReceiver, error) {
	obs, err := receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{
		ReceiverID:             set.ID,
		Transport:              "grpc",
		ReceiverCreateSettings: set,
	})
	if err != nil {
		return nil, err
	}
	return &polystackReceiver{settings: set, cfg: cfg, forget: forget, obs: obs}, nil
}

func (r *polystackReceiver) setProfiles(next xconsumer.Profiles) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.profiles = next
}

func (r *polystackReceiver) setMetrics(next consumer.Metrics) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.metrics = next
}

// Start runs once for all the pipelines that share this receiver.
func (r *polystackReceiver) Start(_ context.Context, host component.Host) error {
	r.startOnce.Do(func() { r.startErr = r.start(host) })
	return r.startErr
}

func (r *polystackReceiver) start(host component.Host) error {
	path, err := r.cfg.executablePath()
	if err != nil {
		return fmt.Errorf("executable: %w", err)
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("cannot open the agent's OTLP endpoint on loopback: %w", err)
	}
	server := grpc.NewServer(grpc.MaxRecvMsgSize(maxRequestBytes))
	pprofileotlp.RegisterGRPCServer(server, &profilesServer{r: r})
	pmetricotlp.RegisterGRPCServer(server, &metricsServer{r: r})
	go func() {
		if err := server.Serve(listener); err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			componentstatus.ReportStatus(host, componentstatus.NewFatalErrorEvent(
				fmt.Errorf("the agent's OTLP endpoint failed: %w", err)))
		}
	}()
	r.server = server

	endpoint := "http://" + listener.Addr().String()
	spec := childSpec{path: path, args: r.cfg.agentArgs(endpoint), env: childEnv(os.Environ(), r.cfg),
		readyPrefixes: agentStartedPrefixes}
	agent := newSupervisor(r.settings.Logger, spec, r.cfg.Restart, func(err error) {
		componentstatus.ReportStatus(host, componentstatus.NewFatalErrorEvent(err))
	})
	if err := agent.start(); err != nil {
		server.Stop()
		return err
	}
	r.agent = agent
	// Start returns once the agent is profiling, so that one that cannot start (BPF
	// unavailable, arguments it rejects) fails Collector start with its reason.
	select {
	case <-agent.ready:
	case <-agent.done:
		server.Stop()
		if err := agent.firstExit(); err != nil {
			return err
		}
		return errors.New("polystack agent stopped before it started profiling")
	case <-time.After(startupTimeout):
		r.settings.Logger.Warn("polystack agent has not said it is profiling yet; going on",
			zap.Duration("waited", startupTimeout))
	}
	return nil
}

// Shutdown stops the agent (it sends its last interval, which is passed on), then the server.
func (r *polystackReceiver) Shutdown(ctx context.Context) error {
	r.shutdownOnce.Do(func() {
		r.forget()
		if r.agent != nil {
			r.agent.shutdown()
		}
		if r.server != nil {
			stopped := make(chan struct{})
			go func() { r.server.GracefulStop(); close(stopped) }()
			select {
			case <-stopped:
			case <-ctx.Done():
				r.server.Stop()
			case <-time.After(serverStopTimeout):
				r.server.Stop()
			}
		}
	})
	return nil
}

// childEnv is the Collector's environment for the agent, minus the OTLP exporter variables
// (they would redirect or alter the agent's private endpoint) and with the chosen java first
// on PATH.
func childEnv(parent []string, cfg *Config) []string {
	env := make([]string, 0, len(parent)+2)
	path := ""
	for _, kv := range parent {
		switch {
		case strings.HasPrefix(kv, "OTEL_EXPORTER_OTLP_"):
		case strings.HasPrefix(kv, "PATH="):
			path = strings.TrimPrefix(kv, "PATH=")
		case strings.HasPrefix(kv, "JAVA_HOME=") && cfg.JavaHome != nil:
		default:
			env = append(env, kv)
		}
	}
	if dir := cfg.javaDir(); dir != "" {
		if path == "" {
			path = dir
		} else {
			path = dir + ":" + path
		}
	}
	if cfg.JavaHome != nil {
		env = append(env, "JAVA_HOME="+*cfg.JavaHome)
	}
	if path != "" {
		env = append(env, "PATH="+path)
	}
	return env
}

// grpcError turns a consumer's error into the status the agent's exporter acts on: retried
// (UNAVAILABLE) unless the pipeline says the data can never be accepted.
func grpcError(err error) error {
	if consumererror.IsPermanent(err) {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	return status.Error(codes.Unavailable, err.Error())
}

type profilesServer struct {
	pprofileotlp.UnimplementedGRPCServer
	r *polystackReceiver
}

func (s *profilesServer) Export(ctx context.Context, req pprofileotlp.ExportRequest) (pprofileotlp.ExportResponse, error) {
	s.r.mu.Lock()
	next := s.r.profiles
	s.r.mu.Unlock()
	if next == nil { // the receiver is in no profiles pipeline
		return pprofileotlp.NewExportResponse(), nil
	}
	profiles := req.Profiles()
	samples := profiles.SampleCount()
	ctx = s.r.obs.StartProfilesOp(ctx)
	err := next.ConsumeProfiles(ctx, profiles)
	s.r.obs.EndProfilesOp(ctx, "protobuf", samples, err)
	if err != nil {
		return pprofileotlp.NewExportResponse(), grpcError(err)
	}
	return pprofileotlp.NewExportResponse(), nil
}

type metricsServer struct {
	pmetricotlp.UnimplementedGRPCServer
	r *polystackReceiver
}

func (s *metricsServer) Export(ctx context.Context, req pmetricotlp.ExportRequest) (pmetricotlp.ExportResponse, error) {
	s.r.mu.Lock()
	next := s.r.metrics
	s.r.mu.Unlock()
	if next == nil { // the receiver is in no metrics pipeline
		return pmetricotlp.NewExportResponse(), nil
	}
	metrics := req.Metrics()
	points := metrics.DataPointCount()
	ctx = s.r.obs.StartMetricsOp(ctx)
	err := next.ConsumeMetrics(ctx, metrics)
	s.r.obs.EndMetricsOp(ctx, "protobuf", points, err)
	if err != nil {
		return pmetricotlp.NewExportResponse(), grpcError(err)
	}
	return pmetricotlp.NewExportResponse(), nil
}
