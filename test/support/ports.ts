/** Free TCP ports on 127.0.0.1, for servers a test starts itself: the cluster stack's own helper. */
export { freePorts } from '../../dev/temporal-cluster.js';
