// Sandboxed processors in child processes (the shared scenarios are in sandbox-suite.ts).
import { sandboxSuite } from './sandbox-suite.js';

sandboxSuite('processes');
