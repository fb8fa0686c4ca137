/* One allocation counter for everything the fault-injection driver runs: SQLite's allocator
 * (SQLITE_CONFIG_MALLOC), the core's and the glue's malloc family (linked with
 * -Wl,--wrap=malloc,...) and cJSON's hooks. Armed with a target N, the N-th allocation after
 * faults_arm fails (once: later ones succeed, so that recovery is exercised too). */
#ifndef EMBED_FAULT_ALLOC_H
#define EMBED_FAULT_ALLOC_H

/* Puts the counting allocator in front of SQLite's and cJSON's; before sqlite3_initialize. */
int faults_install(void);
/* Starts counting from zero; target 0 counts without failing anything. */
void faults_arm(long target);
/* Stops counting (the cleanup allocates freely). */
void faults_disarm(void);
/* Allocations counted since faults_arm. */
long faults_count(void);
/* Whether the target allocation has been failed. */
int faults_fired(void);
/* Prints the failed allocation's stack (stderr) when it fails. */
void faults_trace(int on);
/* From now on, allocation n (1-based, n <= cap) leaves a hash of its call stack in sites[n - 1]:
 * loops make most allocations from one stack. sites NULL stops it. */
void faults_record_sites(unsigned long long *sites, long cap);
/* Called by the function that runs each statement: the frames from it outwards are left out
 * of the hashes, which then do not depend on how the driver reached it. */
void faults_stack_base(void);
/* The call-stack hash of the failed allocation (0 before it fails): a run whose allocation N
 * is not the reference run's is not testing what was chosen. */
unsigned long long faults_fired_site(void);

#endif
