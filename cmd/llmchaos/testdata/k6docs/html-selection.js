// expect: exit 0
// The Selection examples of k6's docs (a definition list parsed with
// parseHTML), their console output replaced by checks; every check must
// pass (a wrong answer crosses the checks threshold: exit 99).
import { parseHTML } from 'k6/html';
import { check, sleep } from 'k6';

export const options = {
  thresholds: { checks: ['rate==1'] },
};

export default function () {
  const content = `
<dl>
  <dt id="term-1">term 1</dt>
  <dd>definition 1-a</dd>
  <dd>definition 1-b</dd>
  <dd>definition 1-c</dd>
  <dd>definition 1-d</dd>

  <dt id="term-2">term 2</dt>
  <dd>definition 2-a</dd>
  <dd>definition 2-b</dd>
  <dd>definition 2-c</dd>

  <dt id="term-3">term 3</dt>
  <dd>definition 3-a</dd>
  <dd>definition 3-b</dd>
</dl>
  `;
  const doc = parseHTML(content);
  const sel = doc.find('dl').children();
  const el1 = sel.get(0);
  const el2 = sel.get(5);
  const dts = doc.find('dt');
  check(doc, {
    'get(): Elements': () => el1.nodeName() === 'dt' && el1.id() === 'term-1' && el1.textContent() === 'term 1' &&
      el2.id() === 'term-2' && sel.get(-1).textContent() === 'definition 3-b' && sel.get(99) === undefined,
    'size, eq, first, last': () => sel.size() === 12 && sel.eq(1).text() === 'definition 1-a' &&
      sel.first().attr('id') === 'term-1' && sel.last().text() === 'definition 3-b',
    'html() of the first': () => dts.html() === 'term 1',
    'text() of all': () => dts.text() === 'term 1term 2term 3',
    'children(selector)': () => doc.find('dl').children('dt').size() === 3,
    'nextUntil': () => doc.find('#term-2').nextUntil('dt').size() === 3 &&
      doc.find('#term-1').nextUntil(doc.find('#term-3'), 'dt').size() === 1 && doc.find('#term-3').nextUntil().size() === 2,
    'prevUntil, parentsUntil': () => doc.find('#term-2').prevUntil('#term-1').size() === 4 &&
      doc.find('dt').first().parentsUntil('body').size() === 1,
    'next, prev, siblings': () => doc.find('#term-1').next().text() === 'definition 1-a' &&
      doc.find('#term-2').prev().text() === 'definition 1-d' && doc.find('#term-2').nextAll('dt').size() === 1 &&
      doc.find('#term-2').prevAll().size() === 5 && doc.find('#term-2').siblings('dt').size() === 2,
    'slice, index': () => sel.slice(1, 3).size() === 2 && sel.slice(-2).text() === 'definition 3-adefinition 3-b' &&
      doc.find('#term-2').index() === 5 && doc.find('#term-3').index('dt') === 2 && dts.index(doc.find('#term-2')) === 1,
    'toArray, map': () => dts.toArray().map((s) => s.attr('id')).join() === 'term-1,term-2,term-3' &&
      dts.map((i, s) => s.attr('id') + i).join() === 'term-10,term-21,term-32',
    'closest, has, add, end': () => doc.find('dd').closest('dl').size() === 1 && doc.find('dl').has('#term-2').size() === 1 &&
      dts.add('dd').size() === 12 && dts.first().end().size() === 3 && doc.find('dt').contents().size() === 3,
    'element siblings': () => el1.nextElementSibling().textContent() === 'definition 1-a' &&
      el2.previousElementSibling().textContent() === 'definition 1-d' && el1.selection().attr('id') === 'term-1' &&
      el1.isSameNode(dts.get(0)) && el1.isEqualNode(dts.get(0)) && !el1.isSameNode(el2) && el1.matches('dt#term-1'),
  });
  let err = '';
  try {
    dts.each('not a function');
  } catch (e) {
    err = String(e);
  }
  check(err, { 'each() wants a function': (e) => e.includes('each: the argument must be a function') });
  sleep(0.01);
}
