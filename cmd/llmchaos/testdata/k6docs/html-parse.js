// expect: exit 0
// k6's "Parse HTML" examples against the stand-in's page: res.html() and
// parseHTML(res.body), the Selection API, typed Elements (links resolve
// against the page's URL), a form serialized, a table; every check must
// pass (a wrong answer crosses the checks threshold: exit 99).
import { parseHTML } from 'k6/html';
import http from 'k6/http';
import { check } from 'k6';

export const options = {
  iterations: 2,
  thresholds: { checks: ['rate==1'] },
};

export default function () {
  const base = __ENV.BASE_URL;
  const res = http.get(`${base}/html`);
  const doc = parseHTML(res.body); // equivalent to res.html()
  const pageTitle = doc.find('head title').text();
  const langAttr = doc.find('html').attr('lang');
  const page = res.html();
  const links = page.find('a');
  const lamp = links.get(0);
  const chair = links.get(1);
  const form = page.find('form');
  check(res, {
    'title and lang': () => pageTitle === 'stand-in shop' && langAttr === 'en',
    'html(selector)': (r) => r.html('li').size() === 3 && r.html().url === `${base}/html`,
    'attr default': () => doc.find('h1').attr('data-none', 'dflt') === 'dflt' && doc.find('h1').attr('nope') === undefined,
    'map over links': () => links.map((i, s) => s.text()).join(',') === 'Lamp,Chair,Desk',
    'each element': () => {
      const seen = [];
      links.each((i, el) => seen.push(i + ':' + el.textContent()));
      return seen.join(' ') === '0:Lamp 1:Chair 2:Desk';
    },
    'hrefs resolve against the page': () => lamp.href() === `${base}/p/1?ref=list#top` &&
      links.get(2).href() === `${base}/p/3` && lamp.pathname() === '/p/1' && lamp.search() === '?ref=list' &&
      lamp.hash() === '#top' && String(lamp) === `${base}/p/1?ref=list#top`,
    'href parts': () => chair.hostname() === 'other.example' && chair.port() === '8443' && chair.username() === 'user' &&
      chair.password() === 'pw' && chair.protocol() === 'https' && chair.origin() === 'https://other.example:8443',
    'unresolved without a page URL': () => doc.find('a').get(0).href() === '/p/1?ref=list#top',
    'filter, not, is': () => page.find('li').filter('.sold-out').size() === 1 && page.find('li').not('.sold-out').size() === 2 &&
      page.find('li').last().is('.sold-out') && page.find('li').filter((i, s) => s.attr('data-id') === '2').text() === 'Chair',
    'data attributes': () => {
      const li = page.find('li').first();
      const all = li.data();
      return li.data('unitPrice') === 9.5 && all.id === 1 && all.tags[1] === 'b' && all.new === true && all.unitPrice === 9.5;
    },
    'form serialized': () => form.serialize() === 'csrftoken=tok-123&lang=en&login=&note=hello&password=&remember=on',
    'form element': () => {
      const f = form.get(0);
      return f.method() === 'post' && f.action() === `${base}/login` && f.elements().length === 7 && f.id() === 'login';
    },
    'form fields': () => page.find('select').val() === 'en' && page.find('textarea').val() === 'hello' &&
      page.find('input[type=checkbox]').val() === 'on' && page.find('select').get(0).selectedIndex() === 0 &&
      page.find('input[name=login]').get(0).form().id() === 'login' && form.serializeObject().note === 'hello' &&
      form.serializeArray()[0].name === 'csrftoken',
    'meta and link': () => page.find('meta[name=csrf-token]').attr('content') === 'tok-123' &&
      page.find('link').get(0).relList().join('|') === 'stylesheet|preload' && page.find('link').get(0).href() === `${base}/static/style.css`,
    'table': () => {
      const t = page.find('table').get(0);
      const row = t.rows()[2];
      return t.rows().length === 3 && t.tHead().nodeName() === 'thead' && t.tBodies().length === 1 &&
        row.rowIndex() === 2 && row.sectionRowIndex() === 1 && row.cells()[1].colSpan() === 2 && row.cells()[1].cellIndex() === 1;
    },
    'elements navigate': () => {
      const ul = page.find('#products').get(0);
      return ul.nodeName() === 'ul' && ul.childElementCount() === 3 && ul.firstElementChild().getAttribute('data-id') === '1' &&
        ul.lastElementChild().classList().join() === 'sold-out' && ul.querySelector('a').textContent() === 'Lamp' &&
        ul.querySelectorAll('a').length === 3 && ul.parentElement().nodeName() === 'body' && ul.nodeType() === 1 &&
        ul.firstChild().nodeType() === 3 && ul.contains(ul.querySelector('a')) && !ul.contains(ul) &&
        ul.hasAttribute('id') && ul.attributes().id.value === 'products' && page.find('h1').get(0).className() === 'title main';
    },
  });
}
