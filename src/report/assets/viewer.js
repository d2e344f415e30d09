// The trajectory viewer of `pwab report`: reads the #pwab-data JSON blob, renders the filtered task list (a page
// at a time, so a full split stays quick) and, for the chosen task only, its trajectory. All text goes in through
// textContent, never as markup. The URL hash (#task=R1:test/17, with :trial when the run has trials) names the
// open task, so a link to a trajectory can be shared and reloads to it.
(function () {
  'use strict';
  var PAGE = 200;            // list rows rendered per "Show more"
  var LONG_OBSERVATION = 600; // longer observations start folded

  var data = JSON.parse(document.getElementById('pwab-data').textContent);

  // What the search box looks in: the task's key, user, target and instruction, and its messages: every action's
  // arguments (the agent's queries, reviews and messages to the user) and the user's replies. Product lists are
  // left out (they would match nearly every query).
  function searchText(t) {
    var parts = [t.key, t.user, t.target, t.instruction];
    (t.actions || []).forEach(function (a) {
      parts.push(a.args);
      if (a.name === 'respond' && a.obs) parts.push(a.obs.text);
    });
    return parts.join(' ').toLowerCase();
  }
  var tasks = data.tasks;
  // With `pwab report --data`: each task has its "category" and "flags" (the diagnosis), and the page has the
  // Category and Flag filters; without, neither.
  var diagnosis = data.diagnosis || null;
  var byKey = {};            // task key -> indices of that task in every run (for "same task in other runs")
  var hasTrials = false;
  tasks.forEach(function (t, i) {
    t.index = i;
    t.search = searchText(t);
    (byKey[t.key] = byKey[t.key] || []).push(i);
    if (t.trial !== undefined && t.trial !== null) hasTrials = true;
  });

  var $ = function (id) { return document.getElementById(id); };
  var state = { run: 'all', type: 'all', ending: 'all', failed: false, below: data.failed_below, text: '',
    category: 'all', flag: 'all', shown: PAGE, matches: [], selected: -1 };

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function fmt3(x) { return typeof x === 'number' ? x.toFixed(3) : '\u2014'; }
  function runId(t) { return data.runs[t.run].id; }
  function taskName(t) { return runId(t) + ':' + t.key + (hasTrials && t.trial != null ? ':' + t.trial : ''); }

  // A task failed when it errored (not scored), scored F = 0, or scored R below the threshold.
  function failed(t, below) { return t.error !== undefined || t.f === 0 || t.r < below; }

  function matches(t) {
    if (state.run !== 'all' && String(t.run) !== state.run) return false;
    if (state.type !== 'all' && t.type !== state.type) return false;
    if (state.ending !== 'all' && (t.error !== undefined ? 'error' : t.ending) !== state.ending) return false;
    if (state.failed && !failed(t, state.below)) return false;
    if (state.category !== 'all' && t.category !== state.category) return false;
    if (state.flag !== 'all' && (t.flags || []).indexOf(state.flag) < 0) return false;
    if (state.text && t.search.indexOf(state.text) < 0) return false;
    return true;
  }

  function definitionOf(list, name) {
    for (var i = 0; i < list.length; ++i) if (list[i].name === name) return list[i].definition;
    return '';
  }
  // The record's primary category with its colour (the legend of "Why tasks fail").
  function categoryCell(t) {
    var td = el('td', 'cat-col');
    if (!t.category) return td;
    td.appendChild(el('span', 'swatch cat-' + t.category));
    td.appendChild(document.createTextNode(t.category));
    td.title = t.category + ': ' + definitionOf(diagnosis.categories, t.category) +
        (t.flags && t.flags.length ? '\nflags: ' + t.flags.join(', ') : '');
    return td;
  }

  function listRow(t) {
    var tr = el('tr', failed(t, state.below) ? 'failed' : '');
    tr.dataset.task = t.index;
    tr.appendChild(el('td', '', runId(t)));
    tr.appendChild(el('td', '', t.key));
    tr.appendChild(el('td', 'trial-col', t.trial != null ? t.trial : ''));
    tr.appendChild(el('td', '', t.type));
    tr.appendChild(el('td', 'num', t.error !== undefined ? '\u2014' : String(t.f)));
    tr.appendChild(el('td', 'num', fmt3(t.r)));
    tr.appendChild(el('td', 'num', t.steps));
    tr.appendChild(el('td', t.error !== undefined ? 'bad' : '', t.error !== undefined ? 'error' : t.ending));
    if (diagnosis) tr.appendChild(categoryCell(t));
    var instr = el('td', 'instr', t.instruction);
    instr.title = t.instruction;
    tr.appendChild(instr);
    if (t.index === state.selected) tr.classList.add('selected');
    return tr;
  }

  function renderList() {
    var body = $('task-list');
    body.textContent = '';
    var n = Math.min(state.shown, state.matches.length);
    var frag = document.createDocumentFragment();
    for (var i = 0; i < n; ++i) frag.appendChild(listRow(tasks[state.matches[i]]));
    body.appendChild(frag);
    var nFailed = state.matches.filter(function (i) { return failed(tasks[i], state.below); }).length;
    var count = $('task-count');
    count.textContent = state.matches.length + ' of ' + tasks.length + ' tasks match (' + nFailed +
        ' of them failed); showing ' + n + '.';
    count.dataset.matching = state.matches.length;
    count.dataset.shown = n;
    $('show-more').hidden = n >= state.matches.length;
  }

  function applyFilters() {
    state.run = $('filter-run').value;
    state.type = $('filter-type').value;
    state.ending = $('filter-ending').value;
    state.failed = $('filter-failed').checked;
    var below = parseFloat($('filter-below').value);
    state.below = isNaN(below) ? data.failed_below : below;
    state.text = $('filter-text').value.trim().toLowerCase();
    if (diagnosis) {
      state.category = $('filter-category').value;
      state.flag = $('filter-flag').value;
    }
    state.shown = PAGE;
    state.matches = [];
    tasks.forEach(function (t, i) { if (matches(t)) state.matches.push(i); });
    renderList();
  }

  // --- the trajectory of one task ------------------------------------------------------------------------

  function prettyArguments(text) {
    try { return JSON.stringify(JSON.parse(text), null, 2); } catch (e) { return text; }
  }

  // An observation: short ones as they are, long ones folded behind their first line; a note when the report
  // cut it (results.jsonl keeps the whole text).
  function observation(obs) {
    var box = el('div');
    var text = obs.text;
    if (text.length > LONG_OBSERVATION) {
      var details = el('details');
      details.appendChild(el('summary', '', text.slice(0, 140).replace(/\s+/g, ' ') + ' \u2026 (' + text.length +
          ' characters)'));
      details.appendChild(el('pre', '', text));
      box.appendChild(details);
    } else {
      box.appendChild(el('pre', '', text));
    }
    if (obs.full_size !== undefined)
      box.appendChild(el('div', 'cut', 'Cut short in this report (pwab report --max-observation): ' +
          obs.full_size + ' bytes in all; results.jsonl holds every one.'));
    return box;
  }

  function fact(parent, label, value, className) {
    var span = el('span', className || '');
    span.appendChild(el('b', '', label + ' '));
    span.appendChild(document.createTextNode(String(value)));
    parent.appendChild(span);
    return span;
  }

  // The products a search or recommendation returned, best first, with the target marked and its rank named.
  function resultList(asins, target) {
    var line = el('div', 'results');
    var rank = asins.indexOf(target);
    line.appendChild(el('span', 'label-muted', 'Results (' + asins.length + '): ' +
        (rank >= 0 ? 'target at rank ' + (rank + 1) : 'target not among them') + ' · '));
    asins.forEach(function (asin, i) {
      line.appendChild(el('code', asin === target ? 'asin target' : 'asin', (i + 1) + '. ' + asin));
    });
    return line;
  }

  function stepCard(a, i, target) {
    var card = el('div', 'step');
    var head = el('div', 'step-head');
    head.appendChild(el('span', 'label-muted', 'Step ' + (i + 1)));
    head.appendChild(el('span', 'name', a.name));
    if (a.reward) {
      var ok = a.reward[0] === 1;
      head.appendChild(el('span', 'badge ' + (ok ? 'ok' : 'no'), 'F ' + a.reward[0] + ' \u00b7 R ' +
          fmt3(a.reward[1])));
    }
    if (a.done) head.appendChild(el('span', 'badge', 'done'));
    card.appendChild(head);
    var body = el('div', 'step-body');
    body.appendChild(el('div', 'label-muted', 'Arguments'));
    body.appendChild(el('pre', 'args', prettyArguments(a.args)));
    if (a.results) body.appendChild(resultList(a.results, target));
    body.appendChild(el('div', 'label-muted', a.name === 'respond' ? 'User reply' : 'Observation'));
    body.appendChild(observation(a.obs));
    card.appendChild(body);
    return card;
  }

  function renderDetail(index) {
    var pane = $('task-detail');
    pane.textContent = '';
    var t = tasks[index];
    if (!t) { pane.appendChild(el('p', 'note', 'No such task.')); return; }
    state.selected = index;
    pane.dataset.task = taskName(t);
    pane.appendChild(el('h3', '', taskName(t) + ' \u00b7 ' + t.type));
    var facts = el('div', 'facts');
    fact(facts, 'Run', data.runs[t.run].id + ' ' + data.runs[t.run].title + ' (' + data.runs[t.run].track + ')');
    if (t.trial != null) fact(facts, 'Trial', t.trial);
    if (t.error !== undefined) {
      fact(facts, 'Error', t.error, 'bad');
    } else {
      fact(facts, 'F', t.f).dataset.field = 'f';
      fact(facts, 'R', fmt3(t.r)).dataset.field = 'r';
    }
    fact(facts, 'Steps', t.steps);
    fact(facts, 'Ending', t.ending || '\u2014');
    if (t.category) {
      var category = fact(facts, 'Category', t.category, 'category');
      category.dataset.field = 'category';
      category.title = definitionOf(diagnosis.categories, t.category);
      category.insertBefore(el('span', 'swatch cat-' + t.category), category.lastChild);
      var flags = fact(facts, 'Flags', t.flags && t.flags.length ? t.flags.join(', ') : 'none');
      flags.dataset.field = 'flags';
      flags.title = (t.flags || []).map(function (f) { return f + ': ' + definitionOf(diagnosis.flags, f); }).join('\n');
      if (t.leaked_replies)
        fact(facts, 'Leaked replies', t.leaked_replies[0] + ' of ' + t.leaked_replies[1], t.leaked_replies[0] ? 'bad' : '');
    }
    fact(facts, 'User', t.user);
    fact(facts, 'Target', t.target);
    fact(facts, 'Tokens', t.tokens[0] + ' in, ' + t.tokens[1] + ' out');
    fact(facts, 'Time', t.seconds[0].toFixed(2) + ' s agent, ' + t.seconds[1].toFixed(2) + ' s environment');
    pane.appendChild(facts);
    if (t.detail) pane.appendChild(el('div', 'diagnosis-detail', 'Why: ' + t.detail));
    if (t.leak_evidence) pane.appendChild(el('div', 'diagnosis-detail', 'Leaked: \u201c' + t.leak_evidence + '\u201d'));
    pane.appendChild(el('div', 'label-muted', 'Instruction'));
    pane.appendChild(el('div', 'instruction', t.instruction));

    var others = (byKey[t.key] || []).filter(function (i) { return i !== index; });
    if (others.length) {
      var line = el('div', 'facts');
      line.appendChild(el('b', '', 'Same task elsewhere:'));
      others.forEach(function (i) {
        var o = tasks[i];
        var link = el('a', '', taskName(o) + ' (F ' + (o.error !== undefined ? '\u2014' : o.f) + ', R ' +
            fmt3(o.r) + ')');
        link.href = '#task=' + encodeURIComponent(taskName(o));
        line.appendChild(link);
      });
      pane.appendChild(line);
    }
    pane.appendChild(el('div', 'label-muted', 'First observation'));
    pane.appendChild(observation(t.first));
    t.actions.forEach(function (a, i) { pane.appendChild(stepCard(a, i, t.target)); });
    if (!t.actions.length) pane.appendChild(el('p', 'note', 'No actions were recorded.'));
    if (t.usage && typeof t.usage === 'object') {
      pane.appendChild(el('div', 'label-muted', 'Model usage'));
      pane.appendChild(el('pre', '', JSON.stringify(t.usage, null, 2)));
    }
    Array.prototype.forEach.call(document.querySelectorAll('#task-list tr.selected'), function (tr) {
      tr.classList.remove('selected');
    });
    var row = document.querySelector('#task-list tr[data-task="' + index + '"]');
    if (row) row.classList.add('selected');
  }

  function select(index) {
    renderDetail(index);
    var t = tasks[index];
    if (t && history.replaceState) history.replaceState(null, '', '#task=' + encodeURIComponent(taskName(t)));
  }

  // Opens the task the fragment names; a link followed from elsewhere also scrolls to the viewer.
  function fromHash(scroll) {
    var m = /^#task=(.+)$/.exec(location.hash);
    if (!m) return;
    var name = decodeURIComponent(m[1]);
    for (var i = 0; i < tasks.length; ++i)
      if (taskName(tasks[i]) === name) {
        renderDetail(i);
        if (scroll === true) $('trajectories').scrollIntoView();
        return;
      }
  }

  // Moves the selection through the filtered list (j / k; the arrow keys keep scrolling the page).
  function step(delta) {
    var pos = state.matches.indexOf(state.selected) + delta;
    if (pos < 0 || pos >= state.matches.length) return;
    if (pos >= state.shown) { state.shown = pos + 1; renderList(); }
    select(state.matches[pos]);
    var row = document.querySelector('#task-list tr[data-task="' + state.matches[pos] + '"]');
    if (row && row.scrollIntoView) row.scrollIntoView({ block: 'nearest' });
  }

  // --- wiring ---------------------------------------------------------------------------------------------

  if (hasTrials) document.body.classList.add('has-trials');
  var endings = {};
  tasks.forEach(function (t) { endings[t.error !== undefined ? 'error' : t.ending] = true; });
  Object.keys(endings).sort().forEach(function (e) {
    var option = el('option', '', e);
    option.value = e;
    $('filter-ending').appendChild(option);
  });
  $('filter-below').value = data.failed_below;
  var filterIds = ['filter-run', 'filter-type', 'filter-ending', 'filter-failed', 'filter-below'];
  if (diagnosis) {
    // The categories and flags the records have, in the taxonomy's order, with how many records have each.
    document.body.classList.add('has-diagnosis');
    var fill = function (select, list, count) {
      list.forEach(function (item) {
        var n = count(item.name);
        if (!n) return;
        var option = el('option', '', item.name + ' (' + n + ')');
        option.value = item.name;
        option.title = item.definition;
        $(select).appendChild(option);
      });
    };
    fill('filter-category', diagnosis.categories, function (name) {
      return tasks.filter(function (t) { return t.category === name; }).length;
    });
    fill('filter-flag', diagnosis.flags, function (name) {
      return tasks.filter(function (t) { return (t.flags || []).indexOf(name) >= 0; }).length;
    });
    if ($('filter-flag').options.length === 1) {
      $('filter-flag').disabled = true;
      $('filter-flag').title = 'No record has a flag';
    }
    filterIds.push('filter-category', 'filter-flag');
  }
  filterIds.forEach(function (id) {
    $(id).addEventListener('change', applyFilters);
  });
  $('filter-text').addEventListener('input', applyFilters);
  $('show-more').addEventListener('click', function () { state.shown += PAGE; renderList(); });
  $('task-list').addEventListener('click', function (e) {
    var row = e.target.closest('tr');
    if (row && row.dataset.task !== undefined) select(Number(row.dataset.task));
  });
  document.addEventListener('keydown', function (e) {
    if (e.target && /^(INPUT|SELECT|TEXTAREA)$/.test(e.target.tagName)) return;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === 'j') step(1);
    if (e.key === 'k') step(-1);
  });
  window.addEventListener('hashchange', fromHash);
  applyFilters();
  fromHash(true);
  document.body.dataset.viewer = 'ready';
})();
