package results

import "time"

// Config is the configuration of one invocation of the experiments, as it is
// written next to its results (the experiments' Config, without where the
// progress and the log go).
type Config struct {
	// Mode is quick, paper or full; the sizes below follow from it.
	Mode string `json:"mode"`
	// Systems to compare: kafka, activemq, rabbitmq.
	Systems []System `json:"systems"`
	// Ablations to run (Kafka only), as named on the command line.
	Ablations []Experiment `json:"ablations"`
	// Out is the directory for results, figures and report.md.
	Out string `json:"out"`
	// WorkDir holds the brokers' data during the run (default: a temporary
	// directory, removed afterwards unless KeepData).
	WorkDir string `json:"work_dir"`
	// KeepData keeps WorkDir after the run.
	KeepData bool `json:"keep_data"`
	// Testbed is loopback or paper.
	Testbed string `json:"testbed"`
	// BinDir holds kafka-server, kafka-producer-perf-test,
	// kafka-consumer-perf-test and rabbitmq-perf-test.
	BinDir string `json:"bin_dir"`
	// RepoDir is the repository root (for scripts/peers.sh and scripts/testbed.sh).
	RepoDir string `json:"repo_dir"`
	// Repeats is how many times each configuration runs (>= 3 for a report).
	Repeats int `json:"repeats"`
	// MainRepeats is how many times each configuration of the paper's
	// comparison runs (0: Repeats).
	MainRepeats int `json:"main_repeats,omitempty"`
	// Runtime is how the systems under test run: "process" (plain processes)
	// or "container" (each in its own container; loopback only). Empty in
	// files written before runtimes existed: processes.
	Runtime string `json:"runtime,omitempty"`
	// ContainerCPUs and ContainerMemory are the limits of every container
	// (docker run --cpus and --memory, no swap), the same for every system.
	ContainerCPUs   string `json:"container_cpus,omitempty"`
	ContainerMemory string `json:"container_memory,omitempty"`

	// MessageSize is the payload of every message (paper: 200 bytes).
	MessageSize int `json:"message_size"`
	// KafkaBatch1Messages is the message count of Kafka's batch-1 producer run.
	KafkaBatch1Messages int64 `json:"kafka_batch1_messages"`
	// KafkaMessages is the message count of Kafka's batch-50 producer run, which
	// the consumer run then reads.
	KafkaMessages int64 `json:"kafka_messages"`
	// PeerMessages is the message count of the peers' producer runs.
	PeerMessages int64 `json:"peer_messages"`
	// PeerTxMessages is the message count of the peers' transaction runs.
	PeerTxMessages int64 `json:"peer_tx_messages"`
	// PeerTimeCap caps every peer run (0: none); a capped run reports what it moved.
	PeerTimeCap time.Duration `json:"peer_time_cap"`
	// PeerWarmUpMessages are sent and received, unmeasured, after a peer starts,
	// so that a quick run does not measure a cold JVM or Erlang VM.
	PeerWarmUpMessages int64 `json:"peer_warm_up_messages"`
	// TxSize is the peers' transaction size (their nearest notion of a batch).
	TxSize int `json:"tx_size"`
	// Prefetch is the consumers' window in messages (paper: ~1000 messages,
	// ~200 KB per pull); Kafka's fetch size is Prefetch * (MessageSize + 9).
	Prefetch int `json:"prefetch"`

	// AblationMessages is the message count of most ablation runs.
	AblationMessages int64 `json:"ablation_messages"`
	// FlushIntervals is the log.flush.interval sweep (messages).
	FlushIntervals []int `json:"flush_intervals"`
	// FlushMessages is the message count of each flush-sweep run.
	FlushMessages int64 `json:"flush_messages"`
	// BatchSizes is the producer batch size sweep.
	BatchSizes []int `json:"batch_sizes"`
	// Codecs is the compression sweep (none, gzip, snappy).
	Codecs []string `json:"codecs"`
	// PartitionCounts is the partition sweep.
	PartitionCounts []int `json:"partition_counts"`
	// GrowthSizes are the log sizes (bytes) at which the growth ablation measures.
	GrowthSizes []int64 `json:"growth_sizes"`
	// GrowthProbeMessages is the size of each probe run of the growth ablation.
	GrowthProbeMessages int64 `json:"growth_probe_messages"`

	// ScaleOutBrokers are the broker counts of the scale-out experiment: a
	// topic spread over N broker hosts, one producer host (paper testbed only;
	// empty: not run).
	ScaleOutBrokers []int `json:"scaleout_brokers"`

	// ZooKeeper is the ensemble the replication part's brokers use, each
	// run under a chroot of its own (loopback).
	ZooKeeper string `json:"zookeeper,omitempty"`
	// ReplicationSeconds is how long each run of the replication part
	// produces.
	ReplicationSeconds float64 `json:"replication_seconds,omitempty"`

	// DiskTestBytes and LoopbackTestBytes size the machine description's
	// bandwidth tests (0: 256 MiB and 1 GiB).
	DiskTestBytes     int64 `json:"disk_test_bytes"`
	LoopbackTestBytes int64 `json:"loopback_test_bytes"`
	// DirtyBytes, when positive, is vm.dirty_bytes for the duration of the
	// run (vm.dirty_background_bytes a quarter of it), the previous
	// settings restored at its end (--dirty-bytes, root; issue 14): the page
	// cache then absorbs as little as a small machine's would, and a
	// producer run of the paper's length is mostly its sustained phase.
	DirtyBytes int64 `json:"dirty_bytes,omitempty"`
	// Pipeline runs only paper §4's two-datacenter pipeline
	// (experiments/pipeline), each of its two phases for PipelinePhase.
	Pipeline      bool          `json:"pipeline,omitempty"`
	PipelinePhase time.Duration `json:"pipeline_phase,omitempty"`
}
