"use strict";

// A claim's argv written to a parked exec box by the claiming (JS) thread
// (binding.claimSend, bench switch claim-send): the box starts the call
// without waiting for the engine's thread to wake. What cannot go this way
// goes to the engine in claim.spec.
const binding = require("./binding");
const init = require("./init");

/** Sends a claim's argv to the waiting box's channel from this thread
 * (binding.claimSend builds the frame and closes the parked handle's copy
 * of the channel): the box starts the call before the engine's thread has
 * even woken, and the rest of the call's setup runs meanwhile. The call's
 * change tracking (watch) begins first, here, for the workload may write
 * before the engine wakes: when the tracker cannot begin at once (events
 * still to read), the engine sends the frame after its own begin. What
 * could not be sent (none, if the box has gone) goes to the engine in
 * claim.spec. A call with stdin leaves the whole frame to the engine: the
 * pipe's read end rides on the frame's first byte (ks__spec_send). So does
 * a process's (withStdin true), whose frame asks for STARTED. */
function sendSpec(box, command, claim, watch, withStdin, process = false) {
  const channel = box.channel;
  box.channel = false;
  const begun = channel && !withStdin && watch !== null ? binding.watchBegin(watch) : null;
  if (begun !== null) claim.begun = begun;
  let unsent = -1;
  if (channel && !withStdin && (watch === null || begun !== null))
    unsent = binding.claimSend(box.parked, command);
  else if (channel) binding.wsClose(box.parked);
  if (unsent === 0) {
    claim.claimOnly = true; // the box has the argv: the call is that box's or none
    return;
  }
  const frame = init.specFrame(command, process);
  claim.spec = unsent > 0 ? frame.subarray(frame.length - unsent) : frame;
}

/** Closes this thread's copy of a parked box's channel, if it still has it. */
function closeChannel(box) {
  if (box.channel) binding.wsClose(box.parked);
  box.channel = false;
}

module.exports = { sendSpec, closeChannel };
