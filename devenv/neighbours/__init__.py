"""nova's neighbours in the local cluster: MariaDB, RabbitMQ, memcached, OVN's databases and
ovn-northd, keystone, placement, glance, neutron."""
