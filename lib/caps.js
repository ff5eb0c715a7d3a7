"use strict";

// Linux capability names, as kern's --cap-drop takes them: case-insensitive,
// with or without the CAP_ prefix, or ALL. An unknown name would make kern
// refuse the box with a usage error, so it is refused here, by option name.
const CAPABILITIES = new Set([
  "CHOWN", "DAC_OVERRIDE", "DAC_READ_SEARCH", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID",
  "SETPCAP", "LINUX_IMMUTABLE", "NET_BIND_SERVICE", "NET_BROADCAST", "NET_ADMIN", "NET_RAW",
  "IPC_LOCK", "IPC_OWNER", "SYS_MODULE", "SYS_RAWIO", "SYS_CHROOT", "SYS_PTRACE", "SYS_PACCT",
  "SYS_ADMIN", "SYS_BOOT", "SYS_NICE", "SYS_RESOURCE", "SYS_TIME", "SYS_TTY_CONFIG", "MKNOD",
  "LEASE", "AUDIT_WRITE", "AUDIT_CONTROL", "SETFCAP", "MAC_OVERRIDE", "MAC_ADMIN", "SYSLOG",
  "WAKE_ALARM", "BLOCK_SUSPEND", "AUDIT_READ", "PERFMON", "BPF", "CHECKPOINT_RESTORE",
]);

/** The canonical spelling (upper case, no CAP_ prefix) of a capability name
 * or ALL, or null if kern would not know it. */
function canonicalCap(name) {
  if (typeof name !== "string") return null;
  const upper = name.toUpperCase();
  if (upper === "ALL") return "ALL";
  const bare = upper.startsWith("CAP_") ? upper.slice(4) : upper;
  return CAPABILITIES.has(bare) ? bare : null;
}

module.exports = { canonicalCap, CAPABILITIES };
