// Sandboxed processors in worker threads (the shared scenarios are in sandbox-suite.ts).
import { sandboxSuite } from './sandbox-suite.js';

sandboxSuite('threads');
