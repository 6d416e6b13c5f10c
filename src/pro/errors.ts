/**
 * BullMQ Pro's group error. An add refused by group.maxSize writes nothing for that job.
 */
import { EchoError, ErrorCodes } from '../core/errors.js';

/** The job's group already holds group.maxSize waiting jobs; the job was not added. */
export class GroupMaxSizeExceededError extends EchoError {
  readonly groupId: string;
  readonly maxSize: number;
  constructor(groupId: string, maxSize: number) {
    super(ErrorCodes.GROUP_MAX_SIZE, `Group max size exceeded: group ${JSON.stringify(groupId)} already holds ${maxSize} waiting jobs`);
    this.groupId = groupId;
    this.maxSize = maxSize;
  }
}
