"""nova's neighbours in the local cluster: MariaDB, RabbitMQ, memcached, keystone, placement."""
