"""RocketMQ's native remoting protocol: frame codec, tolerant JSON, connections, admin calls, ACL."""
