/** The report's stylesheet. */
export const REPORT_STYLE = `
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; max-width: 1180px; padding: 16px 24px; color: #1f2328; background: #fff; }
h1 { font-size: 22px; margin: 8px 0 4px; } h2 { font-size: 17px; margin: 28px 0 4px; } p { margin: 2px 0 8px; color: #57606a; }
pre { background: #f6f8fa; padding: 12px; overflow-x: auto; font-size: 12.5px; border-radius: 6px; }
#load, #split, #budget, #queue, #limited, #dead { width: 100%; }
.chart { width: 100%; height: 300px; }
`;

/**
 * The report's page script (plain browser JavaScript): reads the embedded data and draws every chart with
 * ECharts, without animation, then marks the page ready (`data-ready` on <body>) for screenshots and tests.
 */
export const REPORT_SCRIPT = `
(function () {
  var data = JSON.parse(document.getElementById('report-data').textContent);
  var palette = ['#d62728', '#ff7f0e', '#2ca02c', '#9467bd', '#8c564b', '#e377c2'];
  var charts = [];
  function clock(s) { s = Math.round(s); var h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
    return (h ? h + ':' + String(m).padStart(2, '0') : m) + ':' + String(r).padStart(2, '0'); }
  function make(parent, height) {
    var el = document.createElement('div'); el.className = 'chart'; if (height) el.style.height = height + 'px';
    document.getElementById(parent).appendChild(el);
    var chart = echarts.init(el, null, { renderer: 'canvas' }); charts.push(chart);
    return chart;
  }
  var last = data.t.length ? data.t[data.t.length - 1] + data.stepSeconds : 1;
  var tick = [15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400].find(function (s) { return s >= last / 12; }) || 86400;
  function timeAxis() { return { type: 'value', min: 0, max: last, interval: tick, axisLabel: { formatter: clock }, name: 'time since the start', nameLocation: 'middle', nameGap: 26 }; }
  function points(values) { return values.map(function (v, i) { return [data.t[i], v]; }); }
  function base(title, yName) {
    return { animation: false, title: { text: title, left: 'center', top: 0, textStyle: { fontSize: 13 } },
      tooltip: { trigger: 'axis', axisPointer: { type: 'line' } }, legend: { top: 24, type: 'scroll' },
      grid: { left: 64, right: 24, top: 72, bottom: 44 }, xAxis: timeAxis(),
      yAxis: { type: 'value', name: yName, nameGap: 12 } };
  }
  function shaded(dependency) {
    return { silent: true, data: dependency.unhealthy.map(function (u) {
      return [{ name: u.state, xAxis: u.from, itemStyle: { color: u.state === 'down' ? 'rgba(214,39,40,0.08)' : 'rgba(255,127,14,0.08)' } },
              { xAxis: Math.min(last, u.until) }];
    }) };
  }
  function sum(a, b) { return a.map(function (v, i) { return Math.round((v + (b[i] || 0)) * 100) / 100; }); }

  data.dependencies.forEach(function (d) {
    var option = base('Requests per second to ' + d.name, 'req/s');
    option.series = data.strategies.map(function (s, i) {
      var series = { name: s.label, type: 'line', showSymbol: false, lineStyle: { width: 1.5 }, color: palette[i % palette.length],
        data: points(sum(s.first[d.name], s.retries[d.name])) };
      if (i === 0) series.markArea = shaded(d);
      return series;
    });
    make('load').setOption(option);
  });

  data.strategies.forEach(function (s, i) {
    data.dependencies.forEach(function (d) {
      var option = base(s.label + ': ' + d.name, 'req/s');
      option.series = [
        { name: 'first attempts', type: 'line', stack: 'req', areaStyle: {}, showSymbol: false, color: '#1f77b4', data: points(s.first[d.name]), markArea: shaded(d) },
        { name: 'retries', type: 'line', stack: 'req', areaStyle: {}, showSymbol: false, color: palette[i % palette.length], data: points(s.retries[d.name]) }
      ];
      if (s.refused[d.name].some(function (v) { return v > 0; }))
        option.series.push({ name: 'refused before calling (not sent)', type: 'line', showSymbol: false, color: '#7f7f7f', lineStyle: { type: 'dotted' }, data: points(s.refused[d.name]) });
      make('split', 260).setOption(option);
    });
  });

  var budgeted = data.strategies.filter(function (s) { return data.dependencies.some(function (d) { return s.allowance[d.name].length > 0 && s.allowance[d.name].some(function (v) { return v > 0; }); }); });
  if (budgeted.length === 0) {
    var none = document.createElement('p'); none.textContent = 'No strategy in this run has a budget.';
    document.getElementById('budget').appendChild(none);
  }
  data.dependencies.forEach(function (d) {
    if (budgeted.length === 0) return;
    var option = base('Budget for ' + d.name + ' (per window)', 'retries');
    option.series = [];
    budgeted.forEach(function (s) {
      var i = data.strategies.indexOf(s), color = palette[i % palette.length];
      option.series.push({ name: s.label + ': allowance', type: 'line', showSymbol: false, color: color, lineStyle: { type: 'dashed' }, data: points(s.allowance[d.name]) });
      option.series.push({ name: s.label + ': spent', type: 'line', showSymbol: false, color: color, data: points(s.spent[d.name]) });
    });
    option.series[0].markArea = shaded(d);
    make('budget', 320).setOption(option);
  });

  var queue = base('Queue operations per second (all dependencies)', 'ops/s');
  queue.series = data.strategies.map(function (s, i) {
    var total = data.t.map(function () { return 0; });
    data.dependencies.forEach(function (d) { total = sum(total, s.queueOps[d.name]); });
    var series = { name: s.label, type: 'line', showSymbol: false, lineStyle: { width: 1.5 }, color: palette[i % palette.length], data: points(total) };
    if (i === 0 && data.dependencies.length > 0) series.markArea = shaded(data.dependencies[0]);
    return series;
  });
  make('queue', 320).setOption(queue);

  data.dependencies.forEach(function (d) {
    if (!d.rateLimit) return;
    var ok = base('Successful calls per second to ' + d.name + ' (it answers ' + d.rateLimit.perSecond + '/s)', 'calls/s');
    ok.series = data.strategies.map(function (s, i) {
      var series = { name: s.label, type: 'line', showSymbol: false, lineStyle: { width: 1.5 }, color: palette[i % palette.length], data: points(s.successes[d.name]) };
      if (i === 0) series.markLine = { silent: true, symbol: 'none', label: { formatter: d.rateLimit.perSecond + '/s' }, lineStyle: { type: 'dashed', color: '#555' }, data: [{ yAxis: d.rateLimit.perSecond }] };
      return series;
    });
    make('limited', 300).setOption(ok);
    var limited = base('429 answers per second from ' + d.name + ' (Retry-After ' + d.rateLimit.retryAfterSeconds + ' s)', '429/s');
    limited.series = data.strategies.map(function (s, i) {
      return { name: s.label, type: 'line', showSymbol: false, lineStyle: { width: 1.5 }, color: palette[i % palette.length], data: points(s.rateLimited[d.name]) };
    });
    make('limited', 300).setOption(limited);
  });
  if (data.dependencies.some(function (d) { return d.rateLimit; })) {
    var throughput = { animation: false, title: { text: 'Jobs completed per second until the drain', left: 'center', top: 0, textStyle: { fontSize: 13 } },
      tooltip: { trigger: 'axis', axisPointer: { type: 'shadow' } }, grid: { left: 200, right: 40, top: 40, bottom: 30 },
      xAxis: { type: 'value', name: 'jobs/s' }, yAxis: { type: 'category', data: data.strategies.map(function (s) { return s.label; }) },
      series: [{ type: 'bar', data: data.strategies.map(function (s, i) { return { value: s.throughputPerSecond || 0, itemStyle: { color: palette[i % palette.length] } }; }) }] };
    make('limited', 60 + 50 * data.strategies.length).setOption(throughput);
  }

  var reasons = [];
  data.strategies.forEach(function (s) { Object.keys(s.deadLettered).forEach(function (r) { if (reasons.indexOf(r) < 0) reasons.push(r); }); });
  reasons.sort();
  var dead = { animation: false, title: { text: 'Dead letters by reason', left: 'center', top: 0, textStyle: { fontSize: 13 } },
    tooltip: { trigger: 'axis', axisPointer: { type: 'shadow' } }, legend: { top: 24 },
    grid: { left: 200, right: 40, top: 64, bottom: 30 }, xAxis: { type: 'value', name: 'jobs' },
    yAxis: { type: 'category', data: data.strategies.map(function (s) { return s.label; }) },
    series: reasons.map(function (r) { return { name: r, type: 'bar', stack: 'dead', data: data.strategies.map(function (s) { return s.deadLettered[r] || 0; }) }; }) };
  make('dead', 60 + 70 * data.strategies.length).setOption(dead);

  window.addEventListener('resize', function () { charts.forEach(function (c) { c.resize(); }); });
  document.body.setAttribute('data-ready', 'true');
})();
`;
