# Kafka as in the NetDB'11 paper, in Go. `make run` reruns the paper's
# experiments; `make test` runs every test against real servers.

GO        ?= go
BIN       := bin
ZK_PORT   ?= 2181
ZK_DIR    ?= $(CURDIR)/data/zookeeper-$(ZK_PORT)
FUZZTIME  ?= 60s
OUT       ?= results/latest
RUNTIME   ?= process
export KAFKA_TEST_ZK ?= 127.0.0.1:$(ZK_PORT)

# Every package main under */cmd/* becomes bin/<name>.
CMDS := $(sort $(dir $(wildcard */cmd/*/main.go */*/cmd/*/main.go)))

.PHONY: build test test-short bench fuzz run run-replication publish testbed faults pipeline zookeeper peers containers chromium testbed-tools clean

build:
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/ $(addprefix ./,$(CMDS))

## test: every test, with the race detector, against a real ZooKeeper and the
## real ActiveMQ and RabbitMQ, each installed when missing by the same scripts
## that `make run` uses. The testbed's tests (network namespaces, a 1 Gbit bulk
## transfer) run on their own, after the rest, so that their load does not
## starve the peers' start-up in the experiments' integration tests. The last
## line names every skipped test and why. The fault suite's tests (a fixed
## seed on the testbed) run there too. The layering rules are one of the
## tests (scripts/layers).
test: build zookeeper peers containers chromium testbed-tools
	$(GO) vet ./...
	{ $(GO) test -json -race -count=1 -timeout 15m $$($(GO) list ./... | grep -v '/experiments/testbed\|/experiments/faults$$'); \
	  $(GO) test -json -race -count=1 -timeout 10m ./experiments/testbed/... ./experiments/faults; } | $(GO) run ./scripts/testsummary

## test-short: the tests that need no ZooKeeper, peers or root.
test-short:
	$(GO) test -race -count=1 -short ./...

## bench: the benchmarks of the log, wire format and clients.
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./broker/... ./producer/... ./consumer/...

## fuzz: every fuzzer for FUZZTIME each.
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; done

## run: the paper's Section 5, quick, against real ActiveMQ and RabbitMQ;
## RUNTIME=container runs every server in its own container.
run: build zookeeper
	$(BIN)/kafka-experiments --quick --runtime=$(RUNTIME) --out=$(OUT)

## run-replication: the replication part (paper/replication.md; opt-in in
## `make run`, since it needs ZooKeeper): three brokers, RF=1 against RF=3 with
## acks 1 and all, throughput and end-to-end latency, with its figure
## (fig-replication.png), beside Kafka's main runs; about 6 minutes.
run-replication: build zookeeper
	$(BIN)/kafka-experiments --quick --systems=kafka --ablations=replication --zookeeper=127.0.0.1:$(ZK_PORT) --out=results/replication

## publish: copy the report, figures, runs.csv and runs.json (not the logs) of
## `make run` (results/latest) into paper/results/ and of `make
## run-replication` (results/replication) into paper/results/replication/,
## and of `bin/kafka-experiments --paper --out=results/paper` into
## paper/results/paper/, those that exist, to be committed; README.md and paper/*.md quote them
## (scripts/docscheck's TestQuotedNumbersHaveARun).
publish:
	@set -e; for pair in latest:paper/results replication:paper/results/replication paper:paper/results/paper; do \
	  src=results/$${pair%%:*}; dst=$${pair#*:}; \
	  if [ -f $$src/report.md ]; then \
	    mkdir -p $$dst; cp $$src/report.md $$src/runs.csv $$src/runs.json $$src/*.png $$dst/; \
	    echo "published $$src -> $$dst"; \
	  fi; done

## testbed: the same on the emulated paper testbed (root, iproute2).
testbed: build zookeeper testbed-tools
	$(BIN)/kafka-experiments --quick --testbed=paper --out=results/testbed

## faults: the fault-injection suite, quick (root, iproute2, iptables; issue 13).
## (The zookeeper target installs ZooKeeper; the suite runs its own on the testbed.)
faults: build zookeeper testbed-tools
	$(BIN)/kafka-faults --quick --out=results/faults

## pipeline: paper §4, two datacenters on the emulated testbed (root; else
## loopback): producers, live cluster, kafka-mirror, analysis cluster,
## consumer, the audit; then the mirror SIGKILLed midway.
pipeline: build zookeeper testbed-tools
	$(BIN)/kafka-experiments --pipeline --out=results/pipeline

zookeeper:
	scripts/zookeeper.sh start $(ZK_PORT) $(ZK_DIR)

## peers: install ActiveMQ and RabbitMQ (Debian's packages) when missing; the
## experiments start and stop them.
peers:
	scripts/peers.sh install activemq
	scripts/peers.sh install rabbitmq

## containers: install Docker and debootstrap when missing and build the images
## of the systems under test (scripts/containers.sh), outside the tests' time
## limits; a dockerd started for the build is stopped again.
containers:
	scripts/containers.sh install
	scripts/containers.sh build kafka activemq rabbitmq
	scripts/containers.sh stop

## chromium: install Debian's chromium when missing, for kafka-ui's browser
## test (consumer/ui), which fails in CI without it.
chromium:
	scripts/chromium.sh install

## testbed-tools: install iproute2, iptables and util-linux when missing (the
## testbed's namespaces and links, the fault suite's partitions).
testbed-tools:
	scripts/testbed.sh install

clean:
	-scripts/zookeeper.sh stop $(ZK_PORT) $(ZK_DIR)
	rm -rf $(BIN) data
