package main

// rule says that the packages From (minus Except) never reach, through
// their imports, a package To. A pattern is a package path relative to the
// module ("broker/log"), a tree ("experiments/..." is experiments and every
// package below it) or "..." (every package).
type rule struct {
	What   string // the rule in words, printed with what breaks it
	From   []string
	Except []string
	To     []string
	// Tests extends the rule to the packages' test files: what they
	// import must not be, or reach, a package To either, except through
	// a harness (harnesses), whose job is to start servers for tests.
	Tests bool
}

// The 2011 packages: the paper's broker, clients and coordination, and the
// tools and test harnesses built from them only. The replication layer
// (broker/replica, Kafka 0.8) and its controller (broker/controller) are
// built on them and never the other way round; kafka-server, the 0.8 tools (kafka-topics, kafka-reassign-
// partitions, kafka-preferred-replica-election), replicatest and the
// experiments are what may join the two.
var packages2011 = []string{
	"broker", "broker/wire", "broker/log", "broker/server", "broker/props",
	"broker/metrics", "broker/admin", "broker/audit", "broker/cli/...",
	"broker/brokertest", "broker/brokertest/wait", "broker/brokertest/zkbroker",
	"broker/cmd/kafka-mirror",
	"producer/...", "consumer/...", "zkcoord/...",
}

// harnesses start servers for tests: a test file may import one even where
// the server it starts imports what the rule forbids (a client's test starts
// a real broker, and brokertest/replicatest a replicated one). The check
// does not walk through them; their own files are bound by the rules like
// any package's.
var harnesses = []string{"broker", "broker/brokertest/...", "zkcoord/zktest"}

// rules are the module's layering (README, Layout; issue 25).
var rules = []rule{
	{
		What:  "the clients never import the broker's log, server or replication layer, nor the experiments",
		From:  []string{"producer/...", "consumer/..."},
		To:    []string{"broker/log", "broker/server", "broker/replica/...", "broker/controller", "experiments/..."},
		Tests: true,
	},
	{
		What:  "the 2011 packages never import the replication layer nor its controller",
		From:  packages2011,
		To:    []string{"broker/replica/...", "broker/controller"},
		Tests: true,
	},
	{
		What:   "nothing outside experiments imports experiments",
		From:   []string{"..."},
		Except: []string{"experiments/..."},
		To:     []string{"experiments/..."},
		Tests:  true,
	},
	{
		// The layer runs a candidate it is given (replica.Candidate); its
		// tests may build one.
		What: "the replication layer never imports the controller",
		From: []string{"broker/replica/..."},
		To:   []string{"broker/controller"},
	},
	{
		What:  "zkcoord imports neither the broker's log nor its server",
		From:  []string{"zkcoord/..."},
		To:    []string{"broker/log", "broker/server"},
		Tests: true,
	},
	{
		// Not its tests: they produce what they consume with the producer.
		What: "the consumer never imports the producer",
		From: []string{"consumer/..."},
		To:   []string{"producer/..."},
	},
	{
		// Not its tests: they read what they produced with the consumer.
		// kafka-mirror, which joins the two, is a tool in broker/cmd.
		What: "the producer never imports the consumer",
		From: []string{"producer/..."},
		To:   []string{"consumer/..."},
	},
}
