/* The journey command (engine/cmd/journey.c): argv after "journey"; the
 * process's exit code. */
#ifndef KIQ_CMD_JOURNEY_H
#define KIQ_CMD_JOURNEY_H

int kiq_cmd_journey(int argc, char **argv);

#endif
