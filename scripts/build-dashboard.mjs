// Bundles the dashboard page (src/dashboard/page, Preact) with esbuild into dist/dashboard/app.js,
// after tsc: the published package serves that file and needs no bundler at run time.
import { writeBundle } from '../dist/dashboard/bundle.js';

const { path, bytes } = await writeBundle();
console.log(`dashboard bundle: ${path} (${(bytes / 1024).toFixed(1)} KiB)`);
