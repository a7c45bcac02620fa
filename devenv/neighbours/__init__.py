"""nova's neighbours in the local cluster: MariaDB, RabbitMQ, memcached, OVN's databases,
keystone, placement, glance."""
