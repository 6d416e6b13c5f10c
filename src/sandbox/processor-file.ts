/**
 * Where a sandboxed processor's file is: BullMQ's forms (an absolute or relative path, a path
 * without extension, a `file:` URL string, a URL object), checked at Worker construction so a
 * typo fails at once instead of failing every job.
 */
import { existsSync, statSync } from 'node:fs';
import { extname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EchoError, ErrorCodes } from '../core/errors.js';
import * as v from '../core/validate.js';

/** The processor file does not exist (or is not a file). Message as BullMQ's. */
export class ProcessorFileError extends EchoError {
  readonly file: string;
  constructor(message: string, file: string) {
    super(ErrorCodes.PROCESSOR_FILE, message);
    this.file = file;
  }
}

/** Extensions taken as given; any other name gets `.js` appended, as BullMQ does. */
const KNOWN_EXTENSIONS = new Set(['.js', '.cjs', '.mjs', '.ts', '.cts', '.mts', '.flow']);

/** The absolute path of the processor file; throws ProcessorFileError when it does not exist. */
export function resolveProcessorFile(processor: string | URL): string {
  if (processor instanceof URL) {
    if (processor.protocol !== 'file:') v.fail('processor', 'a file: URL, a path or a function', processor.href);
    const file = fileURLToPath(processor);
    if (!isFile(file)) {
      throw new ProcessorFileError(`URL ${processor.href} does not exist in the local file system (no file at ${file})`, file);
    }
    return file;
  }
  if (processor.length === 0) v.fail('processor', 'a function, a file path or a file: URL', processor);
  if (processor.startsWith('file:')) return resolveProcessorFile(new URL(processor));
  const given = KNOWN_EXTENSIONS.has(extname(processor)) ? processor : `${processor}.js`;
  const file = resolve(given);
  if (!isFile(file)) {
    const detail = file === given ? '' : ` (resolved to ${file})`;
    throw new ProcessorFileError(`File ${given} does not exist${detail}`, file);
  }
  return file;
}

function isFile(path: string): boolean {
  return existsSync(path) && statSync(path).isFile();
}
