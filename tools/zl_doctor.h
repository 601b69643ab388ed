/*
 * zring tools — `zring doctor`: which libzmq a Python (pyzmq) or a running
 * process really loaded, and whether it is zring's libzmq.so.5 drop-in
 * (compat/; it answers zmq_has("zring") with 1, libzmq with 0). Reads the
 * process's /proc/PID/maps; see `zring doctor --help`.
 */
#ifndef ZR_TOOLS_ZL_DOCTOR_H
#define ZR_TOOLS_ZL_DOCTOR_H

/* Runs `zring doctor` with the arguments after "doctor"; returns the exit
 * status: 0 (a libzmq found, and the one --expect asks for), 1 (none loaded,
 * the process cannot be read, Python cannot import zmq, or not the expected
 * one), 2 (usage). */
int zl_doctor_main(int argc, char **argv);

#endif /* ZR_TOOLS_ZL_DOCTOR_H */
