/* A port free on loopback now, for a listener that must be named before it
 * binds (a controller's voter entry). Any thread. */
#ifndef KIQ_NET_FREE_PORT_H
#define KIQ_NET_FREE_PORT_H

/* Below the ephemeral range when one is free there (between this check and
 * the caller's bind an outgoing connection, of anything on the machine,
 * can be given an ephemeral port, and the bind then fails), else the
 * kernel's pick; -1 with the reason. */
int kiq_free_port(void);

#endif
