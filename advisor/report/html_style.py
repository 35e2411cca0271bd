"""The HTML report's inline stylesheet and its hover script (kept apart from the page builder)."""

PAGE_STYLE = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1200px;padding:0 16px;color:#1d2327}
header h1{font-size:20px;margin:12px 0 0}
.meta,.note,.facts{color:#50575e;margin:4px 0}
h2{font-size:16px;margin:18px 0 6px;border-bottom:1px solid #dcdcde;padding-bottom:2px}
.cards{display:flex;gap:8px}
.card{border-radius:6px;padding:4px 14px;min-width:70px;text-align:center;background:#f0f0f1}
.card .n{display:block;font-size:22px;font-weight:600}
.card .what{font-size:12px;text-transform:uppercase;letter-spacing:.04em}
.card.sev-critical{background:#8a1c1c;color:#fff}.card.sev-high{background:#d63638;color:#fff}
.card.sev-medium{background:#f2a900}.card.sev-low{background:#c5d9ed}.card.sev-info{background:#f0f0f1}
.badge{display:inline-block;border-radius:3px;padding:0 6px;font-size:11px;text-transform:uppercase;background:#dcdcde}
.badge.sev-critical{background:#8a1c1c;color:#fff}.badge.sev-high{background:#d63638;color:#fff}
.badge.sev-medium{background:#f2a900}.badge.sev-low{background:#c5d9ed}
details.finding{border-left:4px solid #dcdcde;padding:2px 8px;margin:4px 0;background:#fbfbfb}
details.finding.sev-critical,details.finding.sev-high{border-color:#d63638}
details.finding.sev-medium{border-color:#f2a900}
details.finding summary{cursor:pointer}
.hosts{color:#50575e}
pre.evidence{background:#f6f7f7;padding:6px;overflow-x:auto;white-space:pre-wrap;margin:4px 0}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:3px 8px;border-bottom:1px solid #eee;vertical-align:top}
th{background:#f6f7f7}
.bad,.outcome-new td:first-child,.outcome-still_failing td:first-child{color:#b32d2e;font-weight:600}
.outcome-fixed td:first-child{color:#00803c;font-weight:600}
.ok{color:#00803c}
#others td:nth-child(2),#verify td:nth-child(2){white-space:nowrap}
svg text{font-size:11px;fill:#1d2327}
svg .cell-text{font-size:10px;fill:#fff;pointer-events:none}
svg .cell{cursor:crosshair}
svg .cell:hover{stroke:#000;stroke-width:2}
.plot{overflow-x:auto}
#tip{position:fixed;pointer-events:none;background:#1d2327;color:#fff;padding:4px 8px;border-radius:4px;font-size:12px;max-width:420px}
"""

PAGE_SCRIPT = """
(function(){
  var tip=document.getElementById('tip');
  document.querySelectorAll('svg .cell').forEach(function(c){
    c.addEventListener('mouseenter',function(){tip.textContent=c.getAttribute('data-tip');tip.hidden=false;});
    c.addEventListener('mousemove',function(e){tip.style.left=(e.clientX+14)+'px';tip.style.top=(e.clientY+14)+'px';});
    c.addEventListener('mouseleave',function(){tip.hidden=true;});
  });
})();
"""
