module github.com/netdb11/kafka

go 1.26
