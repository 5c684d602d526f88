/**
 * The dashboard's one stylesheet, sent inline under each response's CSP nonce (no
 * 'unsafe-inline', no style attributes anywhere: colours, sizes and the chart's fills are
 * classes here). Light and dark palettes follow `prefers-color-scheme`; below 760 px the side
 * navigation folds into a scrolling row above the content and tables scroll sideways.
 */
export const DASHBOARD_STYLE = `
:root{color-scheme:light dark;--bg:#f4f5f8;--panel:#fff;--panel-2:#f8f9fb;--text:#161b26;--muted:#5b6474;--line:#e1e4ea;
--accent:#3451d1;--accent-soft:#e8ecfd;--on-accent:#fff;--ok:#11734a;--ok-bg:#e2f5eb;--warn:#8a5300;--warn-bg:#fff1d1;
--bad:#b3261e;--bad-bg:#fde7e5;--info:#1f5fa8;--info-bg:#e4effb;--code:#eef0f4;--shadow:0 1px 2px #10182814,0 1px 3px #1018281a;
--s-queued:#8c96a8;--s-running:#3b82f6;--s-retry:#f59e0b;--s-succeeded:#16a34a;--s-failed:#dc2626}
@media (prefers-color-scheme:dark){:root{--bg:#0e1117;--panel:#161a22;--panel-2:#1b2029;--text:#e7eaf0;--muted:#9aa3b3;--line:#2a303c;
--accent:#8aa2ff;--accent-soft:#222b4a;--on-accent:#0e1117;--ok:#5fd39a;--ok-bg:#123524;--warn:#f3c065;--warn-bg:#3a2c10;
--bad:#ff8a80;--bad-bg:#3d1715;--info:#8cc0ff;--info-bg:#15283f;--code:#222834;--shadow:0 1px 2px #0006;
--s-queued:#6b7385;--s-running:#60a5fa;--s-retry:#fbbf24;--s-succeeded:#4ade80;--s-failed:#f87171}}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:var(--bg);color:var(--text)}
a{color:var(--accent)}a:hover{text-decoration-thickness:2px}
:focus-visible{outline:3px solid var(--accent);outline-offset:2px;border-radius:4px}
.skip{position:absolute;left:-999px;top:.5rem;background:var(--panel);padding:.5rem 1rem;z-index:10}
.skip:focus{left:.5rem}
.sr-only{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}
.top{display:flex;align-items:center;gap:1rem;padding:.65rem 1.25rem;background:var(--panel);border-bottom:1px solid var(--line);flex-wrap:wrap}
.brand{display:flex;align-items:center;gap:.5rem;font-weight:700;font-size:1.05rem;color:var(--text);text-decoration:none}
.brand-mark{display:inline-grid;place-items:center;width:1.7rem;height:1.7rem;border-radius:.45rem;background:var(--accent);color:var(--on-accent);font-size:.9rem}
.top nav{margin-left:auto;display:flex;align-items:center;gap:.9rem;flex-wrap:wrap}
.top nav a{color:var(--muted);text-decoration:none;font-size:.92rem}.top nav a:hover,.top nav a[aria-current]{color:var(--text)}
.who{color:var(--muted);font-size:.88rem;max-width:16rem;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.frame{display:grid;grid-template-columns:15rem minmax(0,1fr);min-height:calc(100vh - 3.3rem)}
.frame.wide{grid-template-columns:minmax(0,1fr)}
.side{background:var(--panel);border-right:1px solid var(--line);padding:1.1rem .75rem}
.side .app-name{font-weight:650;padding:0 .6rem;overflow-wrap:anywhere}
.side .app-slug{color:var(--muted);font-size:.85rem;padding:0 .6rem .75rem}
.side ul{list-style:none;margin:0;padding:0}
.side a{display:block;padding:.45rem .6rem;border-radius:.4rem;color:var(--text);text-decoration:none;font-size:.94rem}
.side a:hover{background:var(--panel-2)}.side a[aria-current]{background:var(--accent-soft);color:var(--accent);font-weight:600}
.side .back{color:var(--muted);font-size:.85rem;margin-bottom:.8rem}
main{padding:1.5rem 2rem 3rem;max-width:78rem;width:100%}
h1{font-size:1.45rem;margin:0 0 .25rem;line-height:1.25}h2{font-size:1.08rem;margin:0 0 .75rem}h3{font-size:.98rem;margin:1rem 0 .5rem}
.lede{color:var(--muted);margin:0 0 1.25rem}
.page-head{display:flex;align-items:flex-start;justify-content:space-between;gap:1rem;flex-wrap:wrap;margin-bottom:1.25rem}
.page-head .lede{margin:0}
.card{background:var(--panel);border:1px solid var(--line);border-radius:.7rem;box-shadow:var(--shadow);padding:1.1rem 1.25rem;margin-bottom:1.25rem}
.card-head{display:flex;align-items:baseline;justify-content:space-between;gap:1rem;flex-wrap:wrap;margin-bottom:.6rem}
.card-head h2{margin:0}
.grid{display:grid;gap:1rem;grid-template-columns:repeat(auto-fit,minmax(11rem,1fr));margin-bottom:1.25rem}
.stat{background:var(--panel);border:1px solid var(--line);border-radius:.7rem;padding:.85rem 1rem;box-shadow:var(--shadow)}
.stat .label{color:var(--muted);font-size:.82rem;text-transform:uppercase;letter-spacing:.04em}
.stat .value{font-size:1.6rem;font-weight:650;font-variant-numeric:tabular-nums}
.stat .label.mono{text-transform:none;letter-spacing:0;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.stat .hint{color:var(--muted);font-size:.8rem}
.facts{display:grid;grid-template-columns:max-content 1fr;gap:.35rem 1.25rem;margin:0}
.facts dt{color:var(--muted)}.facts dd{margin:0;overflow-wrap:anywhere}
.table-wrap{overflow-x:auto;margin:0 -.25rem}
table{border-collapse:collapse;width:100%;font-size:.92rem}
th,td{text-align:left;padding:.5rem .6rem;border-bottom:1px solid var(--line);vertical-align:top}
th{color:var(--muted);font-weight:600;font-size:.8rem;text-transform:uppercase;letter-spacing:.04em;white-space:nowrap}
tbody tr:last-child td{border-bottom:0}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
td.nowrap{white-space:nowrap}
.empty{color:var(--muted);padding:.75rem 0;margin:0}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.86em}
code{background:var(--code);padding:.1rem .3rem;border-radius:.3rem;overflow-wrap:anywhere}
td code{white-space:nowrap;overflow-wrap:normal}
.badge{display:inline-block;padding:.08rem .55rem;border-radius:999px;font-size:.78rem;font-weight:600;background:var(--code);color:var(--muted);white-space:nowrap}
.badge.ok{background:var(--ok-bg);color:var(--ok)}.badge.warn{background:var(--warn-bg);color:var(--warn)}
.badge.bad{background:var(--bad-bg);color:var(--bad)}.badge.info{background:var(--info-bg);color:var(--info)}
.notice{border-radius:.6rem;padding:.8rem 1rem;margin-bottom:1.25rem;border:1px solid transparent}
.notice.ok{background:var(--ok-bg);color:var(--ok)}.notice.warn{background:var(--warn-bg);color:var(--warn);border-color:#0000}
.notice.bad{background:var(--bad-bg);color:var(--bad)}.notice.info{background:var(--info-bg);color:var(--info)}
.notice strong{display:block;margin-bottom:.15rem}.notice p{margin:.2rem 0}.notice form{margin-top:.5rem}
.alert-big{font-size:1.02rem;font-weight:650}
form.inline{display:inline}
.row{display:flex;gap:.75rem;flex-wrap:wrap;align-items:flex-end}
.field{display:flex;flex-direction:column;gap:.25rem;min-width:10rem;flex:1 1 10rem}
.field.small{flex:0 1 8rem;min-width:7rem}
label,.field>span{font-size:.84rem;color:var(--muted);font-weight:550}
input,select{font:inherit;color:var(--text);background:var(--panel);border:1px solid var(--line);border-radius:.45rem;padding:.45rem .6rem;min-height:2.35rem;width:100%}
input:focus,select:focus{border-color:var(--accent)}
button,.button{display:inline-flex;align-items:center;justify-content:center;gap:.35rem;font:inherit;font-weight:600;font-size:.9rem;
border:1px solid var(--accent);background:var(--accent);color:var(--on-accent);border-radius:.45rem;padding:.42rem .9rem;min-height:2.35rem;cursor:pointer;text-decoration:none;white-space:nowrap}
button.secondary,.button.secondary{background:var(--panel);color:var(--text);border-color:var(--line)}
button.danger{background:var(--panel);color:var(--bad);border-color:var(--line)}
button.danger:hover{background:var(--bad-bg)}
button.small,.button.small{min-height:1.9rem;padding:.2rem .6rem;font-size:.82rem}
button:disabled{opacity:.5;cursor:not-allowed}
.actions{display:flex;gap:.5rem;flex-wrap:wrap;align-items:center}
.pager{display:flex;justify-content:space-between;align-items:center;gap:.75rem;margin-top:.9rem;flex-wrap:wrap}
.pager .muted{font-size:.85rem}
.button[aria-disabled="true"]{opacity:.45;pointer-events:none}
.muted{color:var(--muted)}.small-text{font-size:.85rem}
.level{font-weight:650;font-size:.78rem;text-transform:uppercase}
.level.debug{color:var(--muted)}.level.info{color:var(--info)}.level.warn{color:var(--warn)}.level.error{color:var(--bad)}
.message{white-space:pre-wrap;overflow-wrap:anywhere;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:.84rem}
.chart-wrap{overflow-x:auto}.chart{width:100%;min-width:34rem;height:auto;display:block}
.chart .axis{stroke:var(--line)}.chart text{fill:var(--muted);font-size:11px;font-family:system-ui,sans-serif}
.s-queued{fill:var(--s-queued);background:var(--s-queued)}.s-running{fill:var(--s-running);background:var(--s-running)}
.s-retry_wait{fill:var(--s-retry);background:var(--s-retry)}.s-succeeded{fill:var(--s-succeeded);background:var(--s-succeeded)}
.s-dead_lettered{fill:var(--s-failed);background:var(--s-failed)}
.legend{display:flex;gap:1rem;flex-wrap:wrap;font-size:.84rem;color:var(--muted);margin-top:.5rem}
.legend i{display:inline-block;width:.75rem;height:.75rem;border-radius:.2rem;margin-right:.35rem;vertical-align:-.05rem}
.feed{list-style:none;margin:0;padding:0}
.feed li{display:grid;grid-template-columns:auto 1fr auto;gap:.25rem .9rem;padding:.75rem 0;border-bottom:1px solid var(--line);align-items:start}
.feed li:last-child{border-bottom:0}
.feed .dot{width:.65rem;height:.65rem;border-radius:50%;margin-top:.45rem;background:var(--muted)}
.feed .dot.bad{background:var(--bad)}.feed .dot.ok{background:var(--ok)}.feed .dot.warn{background:var(--warn)}
.feed .when{color:var(--muted);font-size:.84rem;white-space:nowrap}
.apps{display:grid;gap:1rem;grid-template-columns:repeat(auto-fill,minmax(17rem,1fr))}
.app-card{display:block;background:var(--panel);border:1px solid var(--line);border-radius:.7rem;padding:1rem 1.1rem;box-shadow:var(--shadow);color:var(--text);text-decoration:none}
.app-card:hover{border-color:var(--accent)}
.app-card .title{font-weight:650;font-size:1.02rem;overflow-wrap:anywhere}.app-card .slug{color:var(--muted);font-size:.85rem;margin-bottom:.6rem}
.app-card .badges{display:flex;gap:.35rem;flex-wrap:wrap}
.section-title{font-size:.82rem;text-transform:uppercase;letter-spacing:.06em;color:var(--muted);margin:1.5rem 0 .6rem}
details.disclose summary{cursor:pointer;color:var(--accent);font-size:.9rem}
.zone{font-size:.8rem;color:var(--muted)}
@media (max-width:760px){
.frame{display:block}.side{border-right:0;border-bottom:1px solid var(--line);padding:.6rem .75rem}
.side .app-name,.side .app-slug,.side .back{display:none}
.side ul{display:flex;gap:.25rem;overflow-x:auto;white-space:nowrap;scrollbar-width:thin}
.side a{padding:.4rem .7rem}
main{padding:1rem 1rem 2.5rem}.grid{grid-template-columns:repeat(2,minmax(0,1fr));gap:.6rem}.stat .value{font-size:1.35rem}.top{padding:.6rem 1rem}.top nav{margin-left:0;width:100%;gap:.75rem}
.who{max-width:100%}.card{padding:.9rem 1rem}.facts{grid-template-columns:1fr}.facts dt{margin-top:.4rem}
.feed li{grid-template-columns:auto 1fr}.feed .when{grid-column:2}
h1{font-size:1.25rem}
}
`
