module github.com/netdb11/kafka

go 1.26

require (
	github.com/go-zookeeper/zk v1.0.4 // indirect
	github.com/golang/snappy v1.0.0 // indirect
	github.com/spf13/pflag v1.1.0 // indirect
)
