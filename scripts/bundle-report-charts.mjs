// Bundles the part of ECharts the simulator's HTML report draws with (line and bar charts, title, tooltip,
// legend, grid, shaded areas, the canvas renderer) into one browser script, dist/sim/report/charts.js,
// exposing the global `echarts`. The report inlines it, so the package needs no ECharts at run time.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { build } from 'esbuild';

const entry = `
import * as echarts from 'echarts/core';
import { BarChart, LineChart } from 'echarts/charts';
import { GridComponent, LegendComponent, MarkAreaComponent, TitleComponent, TooltipComponent } from 'echarts/components';
import { CanvasRenderer } from 'echarts/renderers';
echarts.use([LineChart, BarChart, TitleComponent, TooltipComponent, LegendComponent, GridComponent, MarkAreaComponent, CanvasRenderer]);
export const init = echarts.init;
`;

mkdirSync('dist/sim/report', { recursive: true });
await build({
  stdin: { contents: entry, resolveDir: process.cwd(), loader: 'js' },
  bundle: true,
  minify: true,
  format: 'iife',
  globalName: 'echarts',
  target: 'es2019',
  legalComments: 'none',
  banner: {
    js: '/*! Apache ECharts (Apache-2.0) and ZRender (BSD-3-Clause), bundled: see charts.LICENSE.txt */',
  },
  outfile: 'dist/sim/report/charts.js',
  logLevel: 'warning',
});

// The bundled code's licenses ask that their text travel with it (ECharts', its NOTICE, the d3 parts it
// includes, and those of ZRender and tslib, resolved from ECharts' own folder as it imports them).
/** The folder of package `name` as Node would find it from `from` (a package.json path). */
function packageDir(from, name) {
  const found = createRequire(from)
    .resolve.paths(name)
    ?.map((dir) => join(dir, name))
    .find((dir) => existsSync(join(dir, 'package.json')));
  if (!found) throw new Error(`cannot find ${name} from ${from}: run npm ci`);
  return found;
}
const echartsDir = packageDir(join(process.cwd(), 'package.json'), 'echarts');
const folders = ['echarts', 'zrender', 'tslib'].map((name) => [
  name,
  name === 'echarts' ? echartsDir : packageDir(join(echartsDir, 'package.json'), name),
]);
const files = folders.flatMap(([name, dir]) =>
  ['LICENSE', 'LICENSE.txt', 'NOTICE', 'licenses/LICENSE-d3']
    .filter((file) => existsSync(join(dir, file)))
    .map((file) => `==== ${name}/${file} ====\n\n${readFileSync(join(dir, file), 'utf8')}`),
);
writeFileSync('dist/sim/report/charts.LICENSE.txt', files.join('\n\n'));
